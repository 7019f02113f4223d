"""Broad answers' length against what they find: the same questions answered with several word
budgets for their points (`FOOTNOTE_POINT_WORDS`), one index, one run, one machine.

    python benchmarks/broad_budget.py ../shared/data/docqa-dev \
        --questions ../shared/data/broad-dev/questions.jsonl --home /tmp/docqa-home

With `--where-lost`, where a broad question's key points are lost instead: for each summary,
how-to, list and comparison, the key points held by the sentences of the retrieved chunks, by
those chunks with the chunks beside the best-weighed one, by the best choice of those
sentences within the budget (greedy on points per word: what a perfect choice could show), and
by the points `footnote.answer.points` chooses from the retrieved chunks (the answer, the shape
taken as broad), and by those it chooses with the neighbours added.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from broad_answers import answered
from reader_blend import save_result

from footnote.answer.evidence import reader_candidates
from footnote.answer.points import ScoredSentences, chunk_weights, select_points
from footnote.answer.sentence_spans import sentence_spans
from footnote.application import isolated_app
from footnote.config import Settings
from footnote.core.cjk import count_words
from footnote.core.hits import SearchHit
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import (
    CORPUS_FOLDER,
    DocQuestion,
    doc_report,
    key_points_in,
    load_doc_questions,
)
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE

BUDGETS = (100, 140, 200, 280)
SHOWN = ("complete", "key_point_recall", "words_p50", "words_max", "latency_p50")
BROAD_KINDS = ("summary", "howto", "list", "compare")
STAGES = ("retrieved", "with_neighbours", "best_choice", "chosen", "chosen_with_neighbours")


def run(folder: Path, home: Path, questions: Path, budgets: tuple[int, ...]) -> dict[str, Any]:
    items = load_doc_questions(folder, questions=questions)
    reports = {}
    for budget in budgets:
        outcomes = answered(folder, home, items, {"broad_answers": True, "point_words": budget})
        report = doc_report(folder, 0, Settings(home=home, **UNMEASURED), outcomes)
        reports[str(budget)] = report
        print(f"{budget} words")
        for kind, row in report["metrics"].items():
            print(f"  {kind:13}", {key: row[key] for key in SHOWN if row.get(key) is not None})
    return {"dataset": str(folder), "questions": str(questions), "budgets": reports}


def where_lost(folder: Path, home: Path, questions: Path, budget: int) -> dict[str, Any]:
    """Per kind: the share of questions complete and the key-point recall at each stage."""
    items = [item for item in load_doc_questions(folder, questions=questions) if item.kind in BROAD_KINDS]
    rows = []
    with isolated_app("footnote-broad-", home, dict(UNMEASURED)) as app:
        app.ingest([folder / CORPUS_FOLDER])
        engine, reader = app.answer_engine(), app.models.reader
        assert reader is not None, "the sentence reader is off: where-lost reads with it"
        for item in items:
            hits = engine.retriever.search(item.question, engine.policy.retrieval)
            scored = _read(reader, item.question, hits)
            weights = chunk_weights(scored)  # the reader's best chunk is the one points start from
            best = max(weights, key=lambda source: weights[source])
            wider = [*hits, *_neighbours(app.catalog, hits, hits[best])]
            chosen = select_points(hits, scored, budget)
            shown = [hits[p.source].text[p.start : p.end] for p in chosen]
            read_wider = _read(reader, item.question, wider)
            shown_wider = [
                wider[p.source].text[p.start : p.end] for p in select_points(wider, read_wider, budget)
            ]
            found = {
                "retrieved": key_points_in(item, scored.texts),
                "with_neighbours": key_points_in(item, read_wider.texts),
                "best_choice": _best_choice(item, scored.texts, budget),
                "chosen": key_points_in(item, shown),
                "chosen_with_neighbours": key_points_in(item, shown_wider),
            }
            rows.append((item, found))
            print(item.id, item.kind, {stage: len(points) for stage, points in found.items()}, flush=True)
    report: dict[str, Any] = {}
    for kind in BROAD_KINDS:
        of_kind = [(item, found) for item, found in rows if item.kind == kind]
        report[kind] = {
            stage: {
                "complete": round(sum(len(f[stage]) >= i.min_points for i, f in of_kind) / len(of_kind), 3),
                "key_point_recall": round(
                    sum(len(f[stage]) / len(i.key_points) for i, f in of_kind) / len(of_kind), 3
                ),
            }
            for stage in STAGES
        }
        print(f"  {kind:8}", {stage: report[kind][stage]["complete"] for stage in STAGES})
    report["all"] = {
        stage: round(sum(len(f[stage]) / len(i.key_points) for i, f in rows) / len(rows), 3)
        for stage in STAGES
    }
    print("  key-point recall", report["all"])
    return {"dataset": str(folder), "questions": str(questions), "budget": budget, "where_lost": report}


def _read(reader: Any, question: str, hits: list[SearchHit]) -> ScoredSentences:
    spans = sentence_spans(hits)
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    reading = reader.read(question, [*reader_candidates(hits, spans, texts), NO_ANSWER_CANDIDATE])
    return ScoredSentences(spans, texts, reading.scores[:-1])


def _neighbours(catalog: Any, hits: list[SearchHit], best: SearchHit) -> list[SearchHit]:
    """The chunks just before and after `best` in its document (chunk ids run in document
    order within one ingest), those not retrieved already."""
    held = {hit.chunk_id for hit in hits}
    records = catalog.chunks([best.chunk_id - 1, best.chunk_id + 1])
    return [
        SearchHit(r.id, r.document_id, r.path, r.title, r.text, r.start, r.end, r.heading_path, r.page)
        for r in records.values()
        if r.document_id == best.document_id and r.id not in held
    ]


def _best_choice(item: DocQuestion, texts: list[str], budget: int) -> set[int]:
    """The key points of sentences chosen greedily by new points per word within `budget`."""
    holding = [(text, key_points_in(item, [text])) for text in texts if count_words(text)]
    found: set[int] = set()
    used = 0
    while True:
        fits = [(t, p) for t, p in holding if p - found and used + count_words(t) <= budget]
        if not fits:
            return found
        text, points = max(fits, key=lambda tp: len(tp[1] - found) / count_words(tp[0]))
        found |= points
        used += count_words(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True, help="the index, kept for the next run")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument(
        "--where-lost", action="store_true", help="where key points are lost, at the first budget"
    )
    args = parser.parse_args()
    tag = Path(args.questions).parent.name
    if args.where_lost:
        budget = (
            args.budgets[0] if args.budgets != list(BUDGETS) else Settings.model_fields["point_words"].default
        )
        save_result(
            "broad_budget", f"{tag}-where-lost", where_lost(args.dataset, args.home, args.questions, budget)
        )
        return
    save_result("broad_budget", tag, run(args.dataset, args.home, args.questions, tuple(args.budgets)))


if __name__ == "__main__":
    main()
