"""Declining with the sentence reader, end to end: the reader's floor chosen on two runs of
`footnote eval answers --json` over the same index, one with the reader off (today's gates) and
one with it on and its floor at 0 (`FOOTNOTE_READER_FLOOR=0`), which records each question's
answerability (the reader's best probability times the coverage).

Reported: today's figures; those of today's gates plus the reader's floor, for a few floors; and
the floor chosen for at most 10% false declines, in sample and per fold by document (five folds),
with what each gives. `--held-out` names documents to report apart (those a reader never saw).

    python benchmarks/reader_floor.py OFF.json ON_FLOOR0.json ../shared/data/docqa-dev/questions.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
FLOORS = (0.05, 0.08, 0.1, 0.15, 0.2)
MAX_FALSE = 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("off", type=Path)
    parser.add_argument("on", type=Path)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--held-out", default="", help="comma-separated source documents to report apart")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    off = {o["id"]: o for o in json.loads(args.off.read_text())["questions"]}
    on = {o["id"]: o for o in json.loads(args.on.read_text())["questions"]}
    items = {row["id"]: row for row in map(json.loads, args.questions.read_text().splitlines())}
    ids = [i for i in off if i in on]
    group = {i: items[i].get("source") or i for i in ids}
    held = {name for name in args.held_out.split(",") if name}

    def declined(i: str, floor: float) -> bool:
        return bool(off[i]["abstained"]) or on[i]["answerability"] < floor

    def figures(chosen: Sequence[str], floor_of: dict[str, float]) -> dict[str, float]:
        answerable = [i for i in chosen if off[i]["kind"] != "unanswerable"]
        unanswerable = [i for i in chosen if off[i]["kind"] == "unanswerable"]
        decoyed = [i for i in unanswerable if off[i].get("states_distractor") is not None]
        row = {
            "questions": len(chosen),
            "correct_cited": mean(
                off[i]["correct_cited"] and not declined(i, floor_of[i]) for i in answerable
            ),
            "declines": mean(declined(i, floor_of[i]) for i in unanswerable),
            "false_declines": mean(declined(i, floor_of[i]) for i in answerable),
        }
        if decoyed:
            row["states_distractor"] = mean(
                bool(off[i]["states_distractor"]) and not declined(i, floor_of[i]) for i in decoyed
            )
        return row

    def choose(chosen: Sequence[str]) -> float:
        answerable = [i for i in chosen if off[i]["kind"] != "unanswerable"]
        best = 0.0
        for floor in sorted({0.0} | {on[i]["answerability"] for i in chosen}):
            if mean(declined(i, floor) for i in answerable) <= MAX_FALSE:
                best = max(best, floor)
        return best

    def at(floor: float) -> dict[str, float]:
        return dict.fromkeys(ids, floor)

    names = sorted(set(group.values()))
    random.Random(7).shuffle(names)
    fold = {name: k % 5 for k, name in enumerate(names)}
    per_fold: dict[str, float] = {}
    thresholds = []
    for k in range(5):
        floor = choose([i for i in ids if fold[group[i]] != k])
        thresholds.append(round(floor, 4))
        per_fold.update({i: floor for i in ids if fold[group[i]] == k})
    in_sample = choose(ids)
    report: dict[str, object] = {
        "off": str(args.off),
        "on_floor_0": str(args.on),
        "today": figures(ids, at(0.0)),
        "with_the_reader_floor": {str(f): figures(ids, at(f)) for f in FLOORS},
        "chosen_in_sample": {"floor": round(in_sample, 4), **figures(ids, at(in_sample))},
        "chosen_per_fold": {"floors": thresholds, **figures(ids, per_fold)},
    }
    if held:
        apart = [i for i in ids if group[i] in held]
        report["held_out_documents"] = {
            "today": figures(apart, at(0.0)),
            **{str(f): figures(apart, at(f)) for f in FLOORS},
        }
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"reader_floor{'-' + args.tag if args.tag else ''}-{stamp}.json"
    (RESULTS / name).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    print(f"saved {RESULTS / name}")


def mean(values: object) -> float:
    listed = list(values)  # type: ignore[call-overload]
    return round(float(np.mean(listed)), 4) if listed else float("nan")


if __name__ == "__main__":
    main()
