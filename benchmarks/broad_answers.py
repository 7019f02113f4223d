"""Broad answers side by side with single-fact answers, in one run on one machine.

Every question of a document set is asked end to end twice on the same index: with broad answers
on (a question the shape model takes as needing several passages is answered with them, quoted)
and off (every question gets the single-fact answer), and both reports are saved in one file:
key points found and complete answers (broad-dev), correct and quoted answers and declines
(docqa-dev, squad2-dev), unsupported sentences shown, answer length in words and latency.

    python benchmarks/broad_answers.py ../shared/data/docqa-dev \
        --questions ../shared/data/broad-dev/questions.jsonl --home /tmp/docqa-home --tag broad-dev
    python benchmarks/broad_answers.py ../shared/data/docqa-dev --home /tmp/docqa-home --tag docqa-dev
    python benchmarks/broad_answers.py ../shared/data/squad2-dev --per-source 20 --home /tmp/squad-home
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reader_blend import save_result

from footnote.application import isolated_app
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import CORPUS_FOLDER, doc_report, evaluate_doc_questions, load_doc_questions

MODES = {"points": True, "single-fact": False}
SHOWN = (
    "questions",
    "complete",
    "key_point_recall",
    "correct_cited",
    "abstention",
    "false_abstention",
    "unsupported_shown",
    "words_p50",
    "words_max",
    "first_sentence_p50",
    "latency_p50",
    "latency_p90",
)


def run(folder: Path, home: Path, questions: Path | None, per_source: int | None) -> dict[str, Any]:
    items = load_doc_questions(folder, per_source=per_source, questions=questions)
    reports = {}
    for mode, broad in MODES.items():
        with isolated_app("footnote-broad-", home, {**UNMEASURED, "broad_answers": broad}) as app:
            app.ingest([folder / CORPUS_FOLDER])
            outcomes = evaluate_doc_questions(app.answers, items)
            reports[mode] = doc_report(folder, 0, app.settings, outcomes)
        print(mode)
        for kind, row in reports[mode]["metrics"].items():
            print(f"  {kind:13}", {key: row[key] for key in SHOWN if row.get(key) is not None})
    return {"dataset": str(folder), "questions": str(questions or ""), "per_source": per_source, **reports}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="the index, kept for the next run")
    parser.add_argument("--questions", type=Path, help="another questions file about the same documents")
    parser.add_argument("--per-source", type=int)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    report = run(args.dataset, args.home, args.questions, args.per_source)
    save_result("broad_answers", args.tag or args.dataset.name, report)


if __name__ == "__main__":
    main()
