"""One decline floor on several sets: what a fixed floor on one signal declines, set by set.

Reads the per-question signal files `reader_blend.py --save-signals` writes and reports, for each
floor given, the share of unanswerable questions a question whose signal falls below the floor
declines, and the share of answerable ones it declines falsely; for every set, and for the groups
(documents, articles) named by `--held-out` apart from the rest (those a reader never trained on).

    python benchmarks/decline_floor.py --set docqa-dev=/tmp/docqa.jsonl --set squad2-dev=/tmp/squad.jsonl \\
        --signal answered_share_times_answerability --floor 0.08 --floor 0.10 --held-out Steam_engine.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reader_blend import auc, save_result

RESULTS = Path(__file__).parent / "results"


def rates(rows: list[dict], signal: str, floor: float) -> dict[str, float | int]:
    unanswerable = [r for r in rows if not r["answerable"]]
    answerable = [r for r in rows if r["answerable"]]
    return {
        "declines": round(sum(r[signal] < floor for r in unanswerable) / max(1, len(unanswerable)), 4),
        "false_declines": round(sum(r[signal] < floor for r in answerable) / max(1, len(answerable)), 4),
        "unanswerable": len(unanswerable),
        "answerable": len(answerable),
    }


def described(rows: list[dict], signal: str, floors: list[float]) -> dict[str, object]:
    import numpy as np

    values = np.array([r[signal] for r in rows])
    positive = np.array([bool(r["answerable"]) for r in rows])
    return {
        "auc": round(float(auc(values, positive)), 4),
        "at_floor": {str(f): rates(rows, signal, f) for f in floors},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=signals.jsonl")
    parser.add_argument("--signal", required=True)
    parser.add_argument("--floor", type=float, action="append", required=True)
    parser.add_argument("--held-out", action="append", default=[], help="a group no reader trained on")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    report: dict[str, object] = {"signal": args.signal, "held_out": args.held_out, "sets": {}}
    for entry in args.set:
        name, path = entry.split("=", 1)
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line]
        found: dict[str, object] = {"file": path, "all": described(rows, args.signal, args.floor)}
        held = [r for r in rows if r["group"] in set(args.held_out)]
        if held:
            found["held_out"] = described(held, args.signal, args.floor)
            found["trained_on"] = described([r for r in rows if r not in held], args.signal, args.floor)
        report["sets"][name] = found  # type: ignore[index]
        print(name, json.dumps(found), flush=True)
    save_result("decline_floor", args.tag, report)


if __name__ == "__main__":
    main()
