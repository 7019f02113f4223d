"""Where reading is lost, and what quoting a second passage would buy: the answer's place among
the passages and sentences the engine ranks, and the quote's hold on it with a second passage
quoted when it scores nearly as well as the first.

For a document question set (ingested once into `--home`), every question's top-k chunks are
split and scored as the answer engine scores them (the blend plus the bundled reader, read once),
and the passages chosen as the engine chooses them. Reported:

- answerable questions: the share whose answer is in the best passage, in one of the 2 best, in
  one of the 3 the model reads, in the best sentence, in one of the 5 best, in any sentence;
- where the set says (`plausible`), the share of unanswerable questions whose best passage holds
  the distractor;
- a second passage quoted when its score is at least `r` times the first's, for several `r`: the
  share of answerable questions whose quotes hold the answer, the share of answers given a
  second quote, and the share of unanswerable questions whose quotes hold the distractor.

Nothing is fitted: the figures hold for any split of the documents.

    python benchmarks/second_passage.py ../shared/data/docqa-dev --home /tmp/docqa-home
    python benchmarks/second_passage.py ../shared/data/squad2-dev --home /tmp/squad-home --per-group 20
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from evidence_ablation import read_set, set_arguments
from reader_blend import save_result

from footnote.answer import evidence
from footnote.evaluation.docqa import contains_answer
from footnote.models.cpu import machine

RATIOS = (0.6, 0.7, 0.8, 0.9, 0.95)
BEST_SENTENCES = 5


@dataclass
class Ranked:
    id: str
    answerable: bool
    holds: list[bool]  # each chosen passage, best first: it holds the answer
    distractor: list[bool]  # each chosen passage holds the distractor (unanswerable items)
    scores: list[float]  # each chosen passage's score
    sentences: list[bool]  # the sentences, best first: each holds the answer
    plausible: bool  # the set gives the distractor spans (SQuAD 2.0's unanswerable items)


def share(values: list[bool]) -> float | None:
    """The share of true values; None for none at all (a set without distractor spans)."""
    return round(sum(values) / len(values), 4) if values else None


def with_second(ranked: list[Ranked], ratio: float) -> dict[str, float | None]:
    """The quotes' figures with a second passage quoted at `ratio` of the first's score."""

    def second(r: Ranked) -> bool:
        return len(r.scores) > 1 and r.scores[1] >= ratio * r.scores[0]

    def quoted(found: list[bool], r: Ranked) -> bool:
        return bool(found) and (found[0] or (second(r) and found[1]))

    answerable = [r for r in ranked if r.answerable]
    unanswerable = [r for r in ranked if not r.answerable and r.plausible]
    return {
        "quote_holds_the_answer": share([quoted(r.holds, r) for r in answerable]),
        "answers_with_a_second_quote": share([second(r) for r in answerable]),
        "unanswerable_quotes_holding_the_distractor": share([quoted(r.distractor, r) for r in unanswerable]),
    }


def main() -> None:
    args = set_arguments(__doc__.splitlines()[0])
    read, count = read_set(args, vectors=False)
    ranked = []
    for r in read:
        item, hits, spans, texts = r.item, r.hits, r.spans, r.texts
        # As the engine scores them where the reader reads: no embedding similarity.
        scores = evidence.with_reader(evidence.score_sentences(item.question, spans, None, texts), r.logits)
        passages = evidence.select_passages(hits, spans, scores, count)
        order = sorted(range(len(spans)), key=lambda i: -scores[i])
        plausible = list(item.plausible)
        ranked.append(
            Ranked(
                item.id,
                item.answerable,
                [item.answerable and contains_answer(p.text(hits), item.answers) for p in passages],
                [bool(plausible) and contains_answer(p.text(hits), plausible) for p in passages],
                [p.score for p in passages],
                [item.answerable and contains_answer(texts[i], item.answers) for i in order],
                bool(plausible),
            )
        )
    answerable = [r for r in ranked if r.answerable]
    report = {
        "dataset": str(args.dataset),
        "questions": len(ranked),
        "answerable": len(answerable),
        "per_group": args.per_group or "all",
        "answer_in": {
            "best_passage": share([bool(r.holds) and r.holds[0] for r in answerable]),
            "two_best_passages": share([any(r.holds[:2]) for r in answerable]),
            "passages_the_model_reads": share([any(r.holds) for r in answerable]),
            "best_sentence": share([bool(r.sentences) and r.sentences[0] for r in answerable]),
            "five_best_sentences": share([any(r.sentences[:BEST_SENTENCES]) for r in answerable]),
            "any_sentence": share([any(r.sentences) for r in answerable]),
        },
        "distractor_in_the_best_passage": share(
            [bool(r.distractor) and r.distractor[0] for r in ranked if not r.answerable and r.plausible]
        ),
        "second_quote_at_ratio": {str(ratio): with_second(ranked, ratio) for ratio in RATIOS},
        # Which answerable questions' best passage holds the answer: set beside an end-to-end run,
        # where an answer was lost (declined, or quoted from another passage).
        "best_passage_holds": sorted(r.id for r in answerable if r.holds and r.holds[0]),
        "machine": machine(),
    }
    shown = {k: v for k, v in report.items() if k not in ("machine", "best_passage_holds")}
    print(json.dumps(shown, indent=2))
    save_result("second_passage", args.dataset.name, report)


if __name__ == "__main__":
    main()
