"""Reading on a document set: the evidence-first readers side by side with whole-source reading.

One run, one machine, one ingested index (`--home`, reused), the default bundled models:

1. `sources`: the model reads the whole top-k chunks (the reader before evidence selection),
   on every `--baseline-every`-th question (it takes about 5 s a question);
2. `evidence` at each `--budgets` evidence-token budget: the model reads only the selected
   passages and a verbatim passage stands in when nothing it writes checks out;
3. `extract`: the best evidence passage is the answer, nothing is generated; run with both
   abstention gates off, so the relevance floor and the evidence floor can be chosen on the
   even-numbered questions (at most 10% false abstention there) and scored on the odd ones;
4. `extract` with the chosen floors on every question.

Prints a table and saves everything under benchmarks/results/.

    python benchmarks/reading_docqa.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import (
    CORPUS_FOLDER,
    DocOutcome,
    choose_floor,
    doc_metrics,
    evaluate_doc_questions,
    gated,
    load_doc_questions,
    metrics_by_kind,
)
from footnote.models.cpu import machine

RESULTS = Path(__file__).parent / "results"
COLUMNS = ("correct", "correct_cited", "right_document", "abstention", "false_abstention")
TIMES = ("latency_p50", "latency_p90", "first_sentence_p50", "first_sentence_p90", "prompt_tokens_mean")


def run(home: Path, items: list[Any], **settings: Any) -> list[DocOutcome]:
    app = create_app(Settings(home=home, **settings))
    try:
        return evaluate_doc_questions(app.answers, items)
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--baseline-every", type=int, default=2)
    parser.add_argument("--budgets", default="120,220")
    parser.add_argument("--label", default="")
    args = parser.parse_args()

    items = load_doc_questions(args.dataset)
    app = create_app(Settings(home=args.home))
    app.ingest([args.dataset / CORPUS_FOLDER])
    app.close()
    report: dict[str, Any] = {
        "dataset": str(args.dataset),
        "machine": machine(),
        "runs": {},
    }
    baseline_items = items[:: args.baseline_every]
    runs: dict[str, list[DocOutcome]] = {}
    started = time.perf_counter()
    runs[f"sources (every {args.baseline_every}th question)"] = run(
        args.home, baseline_items, reader="sources"
    )
    ids = {item.id for item in baseline_items}
    for budget in [int(b) for b in args.budgets.split(",")]:
        outcomes = run(args.home, items, reader="evidence", evidence_tokens=budget)
        runs[f"evidence {budget} tokens"] = outcomes
        runs[f"evidence {budget} tokens (same questions as sources)"] = [o for o in outcomes if o.id in ids]
    ungated = run(args.home, items, reader="extract", relevance_floor=0.0, evidence_floor=0.0)
    runs["extract, gates off"] = ungated
    runs["extract, gates off (same questions as sources)"] = [o for o in ungated if o.id in ids]
    even = [o for i, o in enumerate(ungated) if i % 2 == 0]
    odd = [o for i, o in enumerate(ungated) if i % 2 == 1]
    floors = {signal: choose_floor(even, signal) for signal in ("answerability", "match")}
    report["calibration"] = {
        "chosen_on": "even positions",
        "floors": floors,
        "held_out_odd": {
            signal: {k: doc_metrics(gated(odd, signal, floor))[k] for k in ("abstention", "false_abstention")}
            for signal, floor in floors.items()
        },
    }
    final = run(
        args.home,
        items,
        reader="extract",
        relevance_floor=0.0,
        evidence_floor=floors["answerability"],
    )
    runs[f"extract, evidence floor {floors['answerability']:.3f}"] = final
    report["seconds"] = round(time.perf_counter() - started, 1)
    for name, outcomes in runs.items():
        report["runs"][name] = {
            "metrics": metrics_by_kind(outcomes),
            "questions": [vars(o) for o in outcomes],
        }
    width = max(len(name) for name in runs)
    print(f"{'run':{width}}  " + "  ".join(f"{c:>15}" for c in (*COLUMNS, *TIMES)))
    for name, outcomes in runs.items():
        m = doc_metrics(outcomes)
        cells = ["-" if m[c] is None else str(m[c]) for c in (*COLUMNS, *TIMES)]
        print(f"{name:{width}}  " + "  ".join(f"{c:>15}" for c in cells))
    print(json.dumps(report["calibration"], indent=2))
    RESULTS.mkdir(exist_ok=True)
    name = f"reading_docqa{'-' + args.label if args.label else ''}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    (RESULTS / name).write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {RESULTS / name}")


if __name__ == "__main__":
    main()
