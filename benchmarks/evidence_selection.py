"""Evidence selection on a document question set: is the answer in what the model is shown?

For every question of a set such as `../shared/data/docqa-dev` (ingested once into `--home`),
the retrieved chunks are split into sentences, scored and grown into passages exactly as the
answer engine does, and the script reports, per evidence budget:

- chunks: the share of answerable questions whose answer is in one of the top-k chunks;
- passage@1 / passages: ... in the best passage / in any selected passage;
- tokens: mean evidence tokens; ms: mean selection time (embedding included);
- AUC: how well the best passage's score separates answerable from unanswerable questions.

    python benchmarks/evidence_selection.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from footnote.answer import evidence, sentence_spans
from footnote.answer.terms import content_terms
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.sentences import split_sentences
from footnote.evaluation.docqa import CORPUS_FOLDER, contains_answer, load_doc_questions

RESULTS = Path(__file__).parent / "results"


def auc(positives: list[float], negatives: list[float]) -> float:
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="data directory to ingest into and reuse")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--budgets", default="120,160,220,300")
    parser.add_argument("--label", default="")
    args = parser.parse_args()

    items = load_doc_questions(args.dataset)
    app = create_app(Settings(home=args.home))
    app.ingest([args.dataset / CORPUS_FOLDER])
    count = app.generator.count_tokens
    prepared = []
    for item in items:
        started = time.perf_counter()
        hits = app.search(item.question, limit=args.top_k)
        sentences = []
        for index, hit in enumerate(hits):
            for position, (start, end) in enumerate(split_sentences(hit.text)):
                terms = frozenset(content_terms(hit.text[start:end]))
                sentences.append(sentence_spans.SentenceSpan(index, position, start, end, terms))
        vectors = app.embedder.embed_many([hits[s.source].text[s.start : s.end] for s in sentences])
        sentences = [replace(s, vector=v) for s, v in zip(sentences, vectors, strict=True)]
        question_vector = app.embedder.embed(item.question)
        prepared.append((item, hits, sentences, question_vector, time.perf_counter() - started))

    report: dict[str, object] = {"dataset": str(args.dataset), "top_k": args.top_k, "budgets": {}}
    answerable = [p for p in prepared if p[0].answerable]
    chunks = sum(any(contains_answer(h.text, p[0].answers) for h in p[1]) for p in answerable)
    print(f"answer in top-{args.top_k} chunks: {chunks / len(answerable):.3f}")
    report["answer_in_chunks"] = chunks / len(answerable)
    for budget in [int(b) for b in args.budgets.split(",")]:
        first = anywhere = anchor = 0
        tokens: list[int] = []
        seconds: list[float] = []
        best_answerable: list[float] = []
        best_unanswerable: list[float] = []
        misses = []
        for item, hits, sentences, question_vector, prep in prepared:
            started = time.perf_counter()
            texts = [hits[s.source].text[s.start : s.end] for s in sentences]
            scores = evidence.score_sentences(item.question, sentences, question_vector, texts)
            passages = evidence.select_passages(hits, sentences, scores, count, budget)
            seconds.append(prep + time.perf_counter() - started)
            tokens.append(sum(count(p.text(hits)) for p in passages))
            top = passages[0].score if passages else 0.0
            if not item.answerable:
                best_unanswerable.append(top)
                continue
            best_answerable.append(top)
            found = [contains_answer(p.text(hits), item.answers) for p in passages]
            first += bool(found and found[0])
            anchor += bool(passages) and contains_answer(
                hits[passages[0].source].text[passages[0].anchor.start : passages[0].anchor.end], item.answers
            )
            anywhere += any(found)
            if not any(found):
                misses.append(item.id)
        row = {
            "passage_at_1": first / len(answerable),
            "anchor_at_1": anchor / len(answerable),
            "passages": anywhere / len(answerable),
            "tokens_mean": statistics.fmean(tokens),
            "selection_ms_mean": 1000 * statistics.fmean(seconds),
            "auc_best_score": auc(best_answerable, best_unanswerable),
            "misses": misses,
        }
        report["budgets"][str(budget)] = row  # type: ignore[index]
        print(
            f"budget {budget}: passage@1 {row['passage_at_1']:.3f}  anchor@1 {row['anchor_at_1']:.3f}  "
            f"passages {row['passages']:.3f}  tokens {row['tokens_mean']:.0f}  "
            f"ms {row['selection_ms_mean']:.0f}  AUC {row['auc_best_score']:.3f}"
        )
    RESULTS.mkdir(exist_ok=True)
    name = f"evidence_selection-{args.dataset.name}{'-' + args.label if args.label else ''}.json"
    (RESULTS / name).write_text(json.dumps(report, indent=2))
    app.close()


if __name__ == "__main__":
    main()
