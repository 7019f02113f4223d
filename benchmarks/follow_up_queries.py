"""Which query finds a leaning follow-up's evidence, and which question reads it best.

For every follow-up that leans on its first turn (the `dependent` ones of
`benchmarks/data/conversations-docqa-dev.jsonl`, and the 12 of the sample set), with the quote
alone as the answer (the extract reader: no generation, so only search and reading are measured):

- search: does one of the top sources hold the evidence sentence, searching the follow-up alone,
  the last question followed by the follow-up, or both fused by reciprocal rank (equal weights,
  and the follow-up's own search at half weight);
- reading: over the sources of the last question followed by the follow-up, is the answer in
  the quote when the follow-up is read as written, or the two questions together (and in either);
- follow-ups whose own search finds the same first document as after the last question (those
  are not condensed unless they name too little; both kinds): read as written, or the two
  questions together, over the follow-up's own sources;
- the follow-ups footnote condenses (`leans_on_conversation`), each read both ways over the
  sources found after the last question: the number of claim-bearing terms at or below which
  the two questions together are read, chosen on all of them (in sample) and with each document
  held out in turn (the sample set counts as one document), and the answers each choice gets.

    python benchmarks/follow_up_queries.py --docqa-home /tmp/docqa-home --sample-home /tmp/sample-home
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from footnote.answer.engine import AnswerEngine
from footnote.answer.history import leans_on_conversation
from footnote.answer.policy import EXTRACT_READER
from footnote.answer.terms import content_terms
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.evaluation.docqa import contains_answer
from footnote.models.base import Message
from footnote.retrieval.fusion import reciprocal_rank_fusion
from footnote.retrieval.retriever import HybridRetriever

sys.path.insert(0, str(Path(__file__).parent))
from follow_ups import SETS, conversations

RESULTS = Path(__file__).parent / "results"
MAX_TERMS_TRIED = 8


def fused(rankings: list[list[SearchHit]], weights: list[float], limit: int) -> list[SearchHit]:
    found: dict[int, SearchHit] = {}
    for ranking in rankings:
        for hit in ranking:
            found.setdefault(hit.chunk_id, hit)
    order = reciprocal_rank_fusion([[hit.chunk_id for hit in r] for r in rankings], weights=weights)
    return [found[chunk] for chunk, _ in order[:limit]]


def holds(hits: list[SearchHit], evidence: str) -> bool:
    def squash(text: str) -> str:
        return re.sub(r"\s+", "", text.lower())

    return any(squash(evidence)[:60] in squash(hit.text) for hit in hits)


def answered(engine: AnswerEngine, question: str, hits: list[SearchHit], answers: list[str]) -> bool:
    answer = engine.ask_sources(question, hits)
    return contains_answer("" if answer.abstained else answer.text, answers)


def same_document(engine: AnswerEngine, retriever: HybridRetriever, name: str) -> dict[str, dict[str, int]]:
    """Per kind, the follow-ups whose own search finds the same first document as after the last
    question, and how many are answered reading each question over their own sources."""
    params = engine.policy.retrieval
    counts: dict[str, dict[str, int]] = {}
    for row in conversations(name):
        follow_up, after = row["follow_up"], f"{row['first']} {row['follow_up']}"
        alone = retriever.search(follow_up, params)
        if not alone or alone[0].document_id != retriever.search(after, params)[0].document_id:
            continue
        kind = counts.setdefault(
            row["kind"], {"follow_ups": 0, "read_as_written": 0, "read_after_last_question": 0}
        )
        kind["follow_ups"] += 1
        kind["read_as_written"] += answered(engine, follow_up, alone, row["answers"])
        kind["read_after_last_question"] += answered(engine, after, alone, row["answers"])
    return counts


def condensed_readings(engine: AnswerEngine, name: str) -> list[dict[str, Any]]:
    """Each follow-up footnote condenses, with its claim-bearing terms and whether reading it as
    written, or after the last question, answers it over the sources found after the question."""
    retriever, params = engine.retriever, engine.policy.retrieval
    rows = []
    for row in conversations(name):
        turns = [Message("user", row["first"])]
        follow_up, after = row["follow_up"], f"{row['first']} {row['follow_up']}"

        def top_document(query: str) -> int | None:
            hits = retriever.search(query, params)
            return hits[0].document_id if hits else None

        if not leans_on_conversation(follow_up, turns, top_document):
            continue
        joined = retriever.search(after, params)
        rows.append(
            {
                "group": row.get("source") or name,
                "kind": row["kind"],
                "terms": len(content_terms(follow_up)),
                "as_written": answered(engine, follow_up, joined, row["answers"]),
                "after_last_question": answered(engine, after, joined, row["answers"]),
            }
        )
    return rows


def right_at(rows: list[dict[str, Any]], most_terms: int) -> int:
    """Answers when the two questions are read for follow-ups of at most `most_terms` terms."""
    key = lambda row: "after_last_question" if row["terms"] <= most_terms else "as_written"  # noqa: E731
    return sum(row[key(row)] for row in rows)


def choose_most_terms(rows: list[dict[str, Any]]) -> int:
    return max(range(MAX_TERMS_TRIED + 1), key=lambda most: (right_at(rows, most), -most))


def term_threshold(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The threshold chosen in sample, and with each group held out in turn."""
    in_sample = choose_most_terms(rows)
    held_out_right, chosen = 0, {}
    for group in sorted({row["group"] for row in rows}):
        kept = [row for row in rows if row["group"] != group]
        most = choose_most_terms(kept)
        chosen[group] = most
        held_out_right += right_at([row for row in rows if row["group"] == group], most)
    return {
        "follow_ups": len(rows),
        "by_threshold": {most: right_at(rows, most) for most in range(-1, MAX_TERMS_TRIED + 1)},
        "in_sample_threshold": in_sample,
        "in_sample_right": right_at(rows, in_sample),
        "held_out_right": held_out_right,
        "held_out_thresholds": chosen,
    }


def measure(name: str, home: Path) -> dict[str, Any]:
    corpus, _ = SETS[name]
    app = create_app(Settings(home=home))
    try:
        if not app.documents():
            app.ingest([corpus])
        engine = app.answer_engine()
        engine = replace(engine, policy=replace(engine.policy, reader=EXTRACT_READER))
        retriever, params = app.retriever(), engine.policy.retrieval
        counts: dict[str, int] = {}
        rows = [row for row in conversations(name) if row["kind"] == "dependent"]
        for row in rows:
            follow_up, after = row["follow_up"], f"{row['first']} {row['follow_up']}"
            alone, joined = retriever.search(follow_up, params), retriever.search(after, params)
            searches = {
                "alone": alone,
                "after_last_question": joined,
                "fused": fused([joined, alone], [1.0, 1.0], params.limit),
                "fused_half_weight": fused([joined, alone], [1.0, 0.5], params.limit),
            }
            for key, hits in searches.items():
                if "evidence" in row:
                    counts[f"search_{key}"] = counts.get(f"search_{key}", 0) + holds(hits, row["evidence"])
            either = False
            for key, question in (("as_written", follow_up), ("after_last_question", after)):
                right = answered(engine, question, joined, row["answers"])
                either = either or right
                counts[f"read_{key}"] = counts.get(f"read_{key}", 0) + right
            counts["read_either"] = counts.get("read_either", 0) + either
            for key in ("fused", "fused_half_weight"):
                right = answered(engine, follow_up, searches[key], row["answers"])
                counts[f"read_as_written_{key}"] = counts.get(f"read_as_written_{key}", 0) + right
        report = {"follow_ups": len(rows), **counts, "same_document": same_document(engine, retriever, name)}
        return {**report, "condensed": condensed_readings(engine, name)}
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docqa-home", type=Path, required=True)
    parser.add_argument("--sample-home", type=Path, required=True)
    args = parser.parse_args()
    report = {
        "docqa-dev": measure("docqa-dev", args.docqa_home),
        "sample": measure("sample", args.sample_home),
    }
    condensed = report["docqa-dev"]["condensed"] + report["sample"]["condensed"]
    report["reading_threshold"] = term_threshold(condensed)
    print(json.dumps(report, indent=1))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"follow_up_queries-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
