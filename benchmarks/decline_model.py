"""A learned decision to decline: a logistic model over each question's signals, from several sets.

Reads the signal files `reader_blend.py --save-signals` writes (one per set: docqa-dev, squad2-dev,
...) and reports, per set, the share of unanswerable questions declined and of answerable ones
declined falsely, with the threshold chosen for at most 10% false declines:

- per signal alone and for the model, cross-validated by document within the pooled sets (the
  model and its threshold fitted on the other folds only);
- across sets: fitted on every other set, measured on this one (documents of a kind never seen).

`--only` fits the model on a subset of the signals (to see which earn their place).

    python benchmarks/decline_model.py --set docqa-dev=/tmp/docqa.jsonl --set squad2-dev=/tmp/squad.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from reader_blend import auc, decline_figures, decline_threshold, fit_logistic, save_result

FOLDS = 5
NOT_SIGNALS = {"id", "group", "answerable", "plausible"}


def load(sets: list[str]) -> tuple[list[dict], list[str]]:
    rows = []
    for pair in sets:
        name, _, path = pair.partition("=")
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            row["set"] = name
            row["group"] = f"{name}:{row['group']}"
            rows.append(row)
    signals = [k for k in rows[0] if k not in NOT_SIGNALS and k != "set"]
    return rows, signals


def folds(rows: list[dict], seed: int = 7) -> np.ndarray:
    """A fold number per row: whole documents (articles) go to one fold, each set spread evenly."""
    fold = np.zeros(len(rows), dtype=int)
    for name in sorted({r["set"] for r in rows}):
        groups = sorted({r["group"] for r in rows if r["set"] == name})
        random.Random(seed).shuffle(groups)
        of = {g: i % FOLDS for i, g in enumerate(groups)}
        for i, r in enumerate(rows):
            if r["set"] == name:
                fold[i] = of[r["group"]]
    return fold


def per_set(rows: list[dict], declined: np.ndarray, answerable: np.ndarray) -> dict[str, dict]:
    report = {}
    for name in sorted({r["set"] for r in rows}):
        mine = np.array([r["set"] == name for r in rows])
        report[name] = decline_figures(declined[mine], answerable[mine])
    return report


def cross_validated(x: np.ndarray, answerable: np.ndarray, fold: np.ndarray) -> tuple[np.ndarray, list]:
    """Declines with the model and threshold fitted on the other folds (threshold on the training
    folds' own fitted values)."""
    declined = np.zeros(len(x), dtype=bool)
    thresholds = []
    for k in range(FOLDS):
        train, test = fold != k, fold == k
        model = fit_logistic(x[train], answerable[train])
        threshold = decline_threshold(model(x[train]), answerable[train])
        thresholds.append(round(threshold, 4))
        declined[test] = model(x[test]) < threshold
    return declined, thresholds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=signals.jsonl")
    parser.add_argument("--only", nargs="*", help="fit on these signals only")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    rows, signals = load(args.set)
    used = args.only or signals
    answerable = np.array([bool(r["answerable"]) for r in rows])
    x = np.array([[float(r[s]) for s in used] for r in rows])
    fold = folds(rows)
    report: dict[str, object] = {
        "sets": {n: sum(r["set"] == n for r in rows) for n in sorted({r["set"] for r in rows})},
        "signals": used,
    }
    alone = {}
    for s in signals:
        values = np.array([float(r[s]) for r in rows])
        sign = 1.0 if auc(values, answerable) >= 0.5 else -1.0
        declined = np.zeros(len(rows), dtype=bool)
        for k in range(FOLDS):
            train = fold != k
            declined[fold == k] = sign * values[fold == k] < decline_threshold(
                sign * values[train], answerable[train]
            )
        alone[s] = {"auc": round(auc(sign * values, answerable), 4), **per_set(rows, declined, answerable)}
    report["alone_cross_validated"] = alone
    declined, thresholds = cross_validated(x, answerable, fold)
    model = fit_logistic(x, answerable)
    report["model"] = {
        "auc_in_sample": round(auc(model(x), answerable), 4),
        "in_sample": per_set(rows, model(x) < decline_threshold(model(x), answerable), answerable),
        "cross_validated": {"thresholds": thresholds, **per_set(rows, declined, answerable)},
    }
    across = {}
    for name in sorted({r["set"] for r in rows}):
        mine = np.array([r["set"] == name for r in rows])
        if mine.all():
            continue
        other = fit_logistic(x[~mine], answerable[~mine])
        threshold = decline_threshold(other(x[~mine]), answerable[~mine])
        across[name] = {
            "auc": round(auc(other(x[mine]), answerable[mine]), 4),
            **decline_figures(other(x[mine]) < threshold, answerable[mine]),
        }
    report["fitted_on_the_other_sets"] = across
    print(json.dumps(report, indent=2))
    save_result("decline_model", args.tag, report)


if __name__ == "__main__":
    main()
