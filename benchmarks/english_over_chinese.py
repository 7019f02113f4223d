"""English questions over Chinese documents: the floor on the multilingual embedder's best
similarity below which such a question is declined (`FOOTNOTE_FOREIGN_SOURCES_FLOOR`).

Answerable: the 40 rgb-zh-dev questions translated into English by hand
(`benchmarks/data/rgb-zh-dev-queries-en.jsonl`), over rgb-zh-dev's Chinese passages. Unanswerable:
40 docqa-dev questions (English, about software manuals; a fixed sample) over the same passages.
Each is retrieved and read as an answer reads it (`Answering._evidence`): where most of its
sources are Chinese, the multilingual embedder reads it beside every Chinese sentence, and its
best similarity is recorded. For each floor: the share of answerable questions declined (false
declines) and of unanswerable ones. The floor is chosen as the one declining the most unanswerable
questions with at most `MOST_FALSE` false declines, in sample and by two folds (each group halved
by position; chosen on one half, measured on the other).

    python benchmarks/english_over_chinese.py ../shared/data --index-dir /tmp/rgb-e5

The index is the one `footnote eval retrieval ../shared/data/rgb-zh-dev --index-dir DIR` builds.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
from reader_blend import save_result

from footnote.application import create_app
from footnote.config import Settings
from footnote.core.language import detect_language

IN_ENGLISH = Path(__file__).parent / "data" / "rgb-zh-dev-queries-en.jsonl"
UNRELATED = 40
MOST_FALSE = 0.10
FLOORS = tuple(round(0.74 + 0.005 * step, 3) for step in range(31))
SEED = 0


def similarities(data: Path, index_dir: Path) -> list[dict[str, Any]]:
    asked = [("answerable", json.loads(line)["text"]) for line in IN_ENGLISH.read_text().splitlines() if line]
    docqa = [json.loads(line)["question"] for line in (data / "docqa-dev" / "questions.jsonl").open()]
    asked += [("unrelated", q) for q in random.Random(SEED).sample(docqa, UNRELATED)]
    app = create_app(Settings(home=index_dir))
    rows = []
    try:
        app.keep_keyword_index(wait=True)
        engine = app.answer_engine()
        for kind, question in asked:
            answering = engine.for_language(detect_language(question))
            hits = answering.kept(engine.retriever.search(question, answering.retrieval()))
            checker = engine.support.checker(hits, question, engine.policy.judge_threshold)
            _, answerable, _ = answering._evidence(question, checker, question)
            chinese = sum(hit.language == "zh" for hit in hits)
            rows.append(
                {
                    "kind": kind,
                    "question": question,
                    "similarity": answerable.similarity,
                    "chinese_sources": chinese,
                }
            )
            print(kind, answerable.similarity, question[:60], flush=True)
    finally:
        app.close()
    return rows


def declined(rows: list[dict[str, Any]], floor: float) -> dict[str, float]:
    """The share of each kind declined at `floor`, among those the embedder read."""
    shares = {}
    for kind in ("answerable", "unrelated"):
        read = [row["similarity"] for row in rows if row["kind"] == kind and row["similarity"] is not None]
        shares[kind] = round(float(np.mean([s < floor for s in read])), 4) if read else 0.0
    return shares


def chosen(rows: list[dict[str, Any]]) -> float:
    allowed = [f for f in FLOORS if declined(rows, f)["answerable"] <= MOST_FALSE] or [FLOORS[0]]
    return max(allowed, key=lambda f: (declined(rows, f)["unrelated"], -f))


def run(data: Path, index_dir: Path) -> dict[str, Any]:
    rows = similarities(data, index_dir)
    halves = [rows[0::2], rows[1::2]]
    folds = []
    for chosen_on, measured_on in (halves, halves[::-1]):
        floor = chosen(chosen_on)
        folds.append({"floor": floor, "held_out": declined(measured_on, floor)})
    floor = chosen(rows)
    report = {
        "answerable": sum(row["kind"] == "answerable" for row in rows),
        "unrelated": sum(row["kind"] == "unrelated" for row in rows),
        "read_across": {
            kind: sum(row["kind"] == kind and row["similarity"] is not None for row in rows)
            for kind in ("answerable", "unrelated")
        },
        "in_sample": {"floor": floor, **declined(rows, floor)},
        "cross_validated": {
            kind: round(float(np.mean([f["held_out"][kind] for f in folds])), 4)
            for kind in ("answerable", "unrelated")
        },
        "folds": folds,
        "curve": [{"floor": f, **declined(rows, f)} for f in FLOORS],
        "rows": rows,
    }
    print("in sample", report["in_sample"], "cross-validated", report["cross_validated"], folds)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the folder holding docqa-dev")
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--tag", default="rgb-zh-dev")
    args = parser.parse_args()
    save_result("english_over_chinese", args.tag, run(args.data, args.index_dir))


if __name__ == "__main__":
    main()
