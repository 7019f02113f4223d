"""Broad answers' length against what they find: the same questions answered with several word
budgets for their points (`FOOTNOTE_POINT_WORDS`), one index, one run, one machine.

    python benchmarks/broad_budget.py ../shared/data/docqa-dev \
        --questions ../shared/data/broad-dev/questions.jsonl --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from broad_answers import answered
from reader_blend import save_result

from footnote.config import Settings
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import doc_report, load_doc_questions

BUDGETS = (100, 140, 200, 280)
SHOWN = ("complete", "key_point_recall", "words_p50", "words_max", "latency_p50")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True, help="the index, kept for the next run")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    args = parser.parse_args()
    report = run(args.dataset, args.home, args.questions, tuple(args.budgets))
    save_result("broad_budget", Path(args.questions).parent.name, report)


if __name__ == "__main__":
    main()
