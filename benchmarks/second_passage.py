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

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from evidence_ablation import sampled
from reader_blend import save_result

from footnote.answer import evidence
from footnote.answer.citations import CitationChecker
from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import CORPUS_FOLDER, contains_answer, load_doc_questions
from footnote.models.cpu import machine
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE, OnnxSentenceReader, bundled_reader_files

RATIOS = (0.6, 0.7, 0.8, 0.9, 0.95)
BEST_SENTENCES = 5


@dataclass
class Ranked:
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--per-group", type=int, default=0, help="at most this many questions per document")
    args = parser.parse_args()

    app = create_app(Settings(home=args.home))
    if not app.catalog.chunk_id_list():
        app.ingest([args.dataset / CORPUS_FOLDER])
    reader = OnnxSentenceReader(bundled_reader_files())
    count = app.generator.count_tokens
    ranked = []
    for item in sampled(load_doc_questions(args.dataset), args.per_group):
        hits = app.search(item.question, limit=args.top_k)
        checker = CitationChecker(hits, app.embedder, question=item.question)
        spans = checker.sentence_spans(vectors=False)
        if not spans:
            continue
        texts = [hits[s.source].text[s.start : s.end] for s in spans]
        candidates = [*evidence.reader_candidates(hits, spans, texts), NO_ANSWER_CANDIDATE]
        logits = reader.read(item.question, candidates).scores[:-1]
        # As the engine scores them where the reader reads: no embedding similarity.
        scores = evidence.with_reader(evidence.score_sentences(item.question, spans, None, texts), logits)
        passages = evidence.select_passages(hits, spans, scores, count)
        order = sorted(range(len(spans)), key=lambda i: -scores[i])
        plausible = list(item.plausible)
        ranked.append(
            Ranked(
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
        "machine": machine(),
    }
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=2))
    save_result("second_passage", args.dataset.name, report)


if __name__ == "__main__":
    main()
