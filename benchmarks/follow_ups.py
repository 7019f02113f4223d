"""Follow-up questions: the second turn of a conversation, answered with and without the first.

Two sets of two-turn conversations:

- `docqa-dev` (`benchmarks/data/conversations-docqa-dev.jsonl`, checked against the documents by
  `benchmarks/data/verify_conversations.py`): 66 conversations over the 33 docqa-dev documents,
  half with a follow-up that names its subject ("self-contained"), half with one that leans on the
  first turn ("dependent": "And for DSA keys?", "What is its default?");
- `sample`: 12 conversations over `examples/sample`, every follow-up dependent.

The first question is answered as a user would see it; the follow-up is then answered

1. with the conversation (the first question and footnote's answer to it), and
2. alone, as a client that sends only the last message would have it answered.

A follow-up is correct when the answer holds an expected text, and correct and cited when a
citation's quote holds it too. Also reported: whether the follow-up was condensed (the model
was asked to rewrite it) and the question its sources were read for; the seconds to the whole
answer of first questions and of follow-ups with the conversation (condensing included); and
sentences the model wrote that are degenerate (a loop, or mostly repeated words). Default
bundled models; one run, one machine.

    python benchmarks/follow_ups.py --set docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from footnote.answer.engine import AnswerEngine
from footnote.answer.streaming import final
from footnote.answer.usage import CONDENSE_STEP
from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import contains_answer, degenerate_shown
from footnote.models.base import Message
from footnote.models.cpu import machine

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
SETS = {
    "docqa-dev": (REPO.parent / "shared" / "data" / "docqa-dev" / "corpus", REPO / "benchmarks" / "data"),
    "sample": (REPO / "examples" / "sample", None),
}

# (first question, follow-up, what the follow-up's answer must hold): every follow-up depends.
SAMPLE_CONVERSATIONS = [
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


def conversations(name: str) -> list[dict[str, Any]]:
    if name == "sample":
        return [
            {"id": f"s{n:02d}", "kind": "dependent", "first": first, "follow_up": follow, "answers": [answer]}
            for n, (first, follow, answer) in enumerate(SAMPLE_CONVERSATIONS, start=1)
        ]
    path = REPO / "benchmarks" / "data" / f"conversations-{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged(answer: Any, expected: list[str]) -> dict[str, Any]:
    shown = "" if answer.abstained else answer.text
    correct = contains_answer(shown, expected)
    cited = correct and any(contains_answer(c.quote, expected) for c in answer.citations)
    return {
        "answer": answer.text,
        "correct": correct,
        "correct_cited": cited,
        "abstained": answer.abstained,
        "degenerate": degenerate_shown(answer),
        "cited": sorted({Path(c.path).name for c in answer.citations}),
    }


def timed(engine: AnswerEngine, question: str, history: list[Message] | None = None) -> tuple[Any, float]:
    started = time.perf_counter()
    answer = final(engine.stream(question, history))
    return answer, time.perf_counter() - started


def run_conversation(engine: AnswerEngine, row: dict[str, Any]) -> dict[str, Any]:
    opening, first_seconds = timed(engine, row["first"])
    history = [Message("user", row["first"]), Message("assistant", opening.text)]
    with_history, seconds = timed(engine, row["follow_up"], history)
    alone = engine.ask(row["follow_up"])
    return {
        "id": row["id"],
        "kind": row["kind"],
        "source": row.get("source"),
        "first": row["first"],
        "follow_up": row["follow_up"],
        "expected": row["answers"],
        "first_answer": opening.text,
        "first_seconds": round(first_seconds, 3),
        "condensed": with_history.usage.step(CONDENSE_STEP).calls > 0,
        "read_as": with_history.question,
        "with_conversation": {**judged(with_history, row["answers"]), "seconds": round(seconds, 3)},
        "alone": judged(alone, row["answers"]),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for kind in [*sorted({row["kind"] for row in rows}), "all"]:
        chosen = [row for row in rows if kind in ("all", row["kind"])]
        summary[kind] = {
            mode: {
                measure: round(sum(row[mode][measure] for row in chosen) / len(chosen), 3)
                for measure in ("correct", "correct_cited", "abstained")
            }
            for mode in ("with_conversation", "alone")
        }
        summary[kind]["conversations"] = len(chosen)
        summary[kind]["condensed"] = sum(row["condensed"] for row in chosen)
    firsts = [row["first_seconds"] for row in rows]
    follow_ups = [row["with_conversation"]["seconds"] for row in rows]
    summary["latency"] = {
        "first_question_p50": round(statistics.median(firsts), 3),
        "follow_up_p50": round(statistics.median(follow_ups), 3),
        "ratio": round(statistics.median(follow_ups) / statistics.median(firsts), 2),
    }
    summary["degenerate_shown"] = sum(
        row[mode]["degenerate"] for row in rows for mode in ("with_conversation", "alone")
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="docqa-dev")
    parser.add_argument("--home", type=Path, required=True, help="index of the set's corpus (made if empty)")
    parser.add_argument("--label", default="", help="added to the result file's name")
    args = parser.parse_args()
    corpus, _ = SETS[args.set]
    if not corpus.is_dir():
        raise SystemExit(f"{corpus} is absent: the {args.set} set needs it")
    app = create_app(Settings(home=args.home))
    try:
        if not app.documents():
            app.ingest([corpus])
        engine = app.answer_engine()
        rows = []
        for row in conversations(args.set):
            result = run_conversation(engine, row)
            rows.append(result)
            modes = ("with_conversation", "alone")
            marks = "".join("+" if result[mode]["correct_cited"] else "-" for mode in modes)
            print(f"{marks} {row['kind'][:4]} {row['follow_up']} -> {result['read_as']!r}", flush=True)
    finally:
        app.close()
    summary = summarise(rows)
    print(json.dumps(summary, indent=2))
    RESULTS.mkdir(exist_ok=True)
    label = f"-{args.label}" if args.label else ""
    out = RESULTS / f"follow_ups-{args.set}{label}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report = {"set": args.set, "summary": summary, "rows": rows, "machine": machine()}
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
