"""Whether two runs of `footnote eval answers --json` gave the same answers, question by question.

A change that should leave answers alone (moving code between layers, one loop instead of two) is
checked by answering a set before and after it and comparing what each question got: the answer's
text (its quotes and the model's sentences), the documents it cites, and whether it declined.
Works on document sets (docqa-dev, squad2-dev) and on RGB runs (each run compared on its own).

    python benchmarks/same_answers.py before.json after.json --tag answer-service
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from reader_blend import save_result

# What must match for two answers to a question to count as the same.
COMPARED = ("answer", "cited", "abstained", "citations", "positive_citations")


def answers_of(report: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each run's answers by question id: a document set is one run; RGB reports name theirs."""
    if "runs" in report:
        return {name: {str(q["id"]): q for q in run["questions"]} for name, run in report["runs"].items()}
    return {"answers": {str(q["id"]): q for q in report["questions"]}}


def compared(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    runs = {}
    old, new = answers_of(before), answers_of(after)
    for name in sorted(set(old) | set(new)):
        first, second = old.get(name, {}), new.get(name, {})
        differ = sorted(
            qid
            for qid in set(first) | set(second)
            if qid not in first
            or qid not in second
            or any(first[qid].get(key) != second[qid].get(key) for key in COMPARED)
        )
        runs[name] = {"questions": len(set(first) | set(second)), "different": len(differ), "which": differ}
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    before = json.loads(args.before.read_text(encoding="utf-8"))
    after = json.loads(args.after.read_text(encoding="utf-8"))
    report = {"before": str(args.before), "after": str(args.after), "runs": compared(before, after)}
    print(json.dumps(report, indent=2))
    save_result("same_answers", args.tag or args.after.stem, report)


if __name__ == "__main__":
    main()
