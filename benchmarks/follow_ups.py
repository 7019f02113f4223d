"""Follow-up questions: the second turn of a conversation, answered with and without the first.

Each conversation over the sample corpus (`examples/sample`) is a first question and a
follow-up that names its subject only through the first ("In which year?", "What nationality
was he?"), so that alone it could be asked of more than one document. The
first question is answered as a user would see it; the follow-up is then answered

1. with the conversation (the first question and footnote's answer to it), and
2. alone, as a client that sends only the last message would have it answered.

A follow-up is correct when the answer holds the expected text, and correct and cited when a
citation's quote holds it too. Default bundled models; one run, one machine.

    python benchmarks/follow_ups.py --home /tmp/follow-ups-home
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import contains_answer
from footnote.models.base import Message

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
SAMPLE = REPO / "examples" / "sample"

# (first question, follow-up, what the follow-up's answer must hold)
CONVERSATIONS = [
    ("Who invented the Fresnel lens?", "What country was he from?", "French"),
    ("Who decoded the waggle dance of honeybees?", "What nationality was he?", "Austrian"),
    (
        "Which was the last staffed lighthouse in the United Kingdom?",
        "In which year did that change?",
        "1998",
    ),
    ("Which volcano buried the Roman town of Pompeii?", "In which year?", "79 AD"),
    ("Where are the highest tides in the world?", "In which country is it?", "Canada"),
    ("What is the largest active volcano on Earth by volume?", "Where is it?", "Hawaii"),
    ("Which tidal power station is in France?", "What does it produce?", "electricity"),
    ("Who shared the Nobel Prize with Karl von Frisch?", "In which year?", "1973"),
    ("What is a first-order Fresnel lens?", "How far can its beam reach?", "20 nautical miles"),
    ("What do older worker bees do?", "How long do they live in summer?", "six weeks"),
    ("Which tides happen at new moon and full moon?", "How often do they happen?", "twice a month"),
    ("What are pyroclastic flows?", "How fast do they move?", "100 kilometres per hour"),
]


def judged(answer: Any, expected: str) -> dict[str, Any]:
    shown = "" if answer.abstained else answer.text
    correct = contains_answer(shown, [expected])
    cited = correct and any(contains_answer(c.quote, [expected]) for c in answer.citations)
    return {"answer": answer.text, "correct": correct, "correct_cited": cited, "abstained": answer.abstained}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="index of the sample corpus (made if empty)")
    args = parser.parse_args()
    app = create_app(Settings(home=args.home))
    try:
        if not app.documents():
            app.ingest([SAMPLE])
        engine = app.answer_engine()
        rows = []
        for first, follow_up, expected in CONVERSATIONS:
            opening = engine.ask(first)
            history = [Message("user", first), Message("assistant", opening.text)]
            started = time.perf_counter()
            with_history = engine.ask(follow_up, history)
            seconds = time.perf_counter() - started
            alone = engine.ask(follow_up)
            row = {
                "first": first,
                "follow_up": follow_up,
                "expected": expected,
                "first_answer": opening.text,
                "with_conversation": {**judged(with_history, expected), "seconds": round(seconds, 2)},
                "alone": judged(alone, expected),
            }
            rows.append(row)
            print(
                f"{'+' if row['with_conversation']['correct_cited'] else '-'}"
                f"{'+' if row['alone']['correct_cited'] else '-'} {follow_up} -> {with_history.text[:90]!r}"
            )
    finally:
        app.close()
    summary = {
        mode: {
            measure: round(sum(row[mode][measure] for row in rows) / len(rows), 3)
            for measure in ("correct", "correct_cited", "abstained")
        }
        for mode in ("with_conversation", "alone")
    }
    print(json.dumps(summary, indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = RESULTS / f"follow_ups-sample-{stamp}.json"
    machine = {"cpus": os.cpu_count(), "load": list(os.getloadavg()), "python": platform.python_version()}
    report = {"conversations": len(rows), "summary": summary, "rows": rows, "machine": machine}
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
