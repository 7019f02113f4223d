"""Answers on a machine another process keeps busy: the same questions answered quiet and with
`--busy` busy loops running beside, for the generator's threads shared with the other process
(the default: as many as the cores it leaves free) and fixed on every core, one index, one run.

    python benchmarks/busy_answers.py ../shared/data/docqa-dev --home /tmp/docqa-home --busy 1

With `--ingest FOLDER`, answers while the same process ingests FOLDER into a copy of the index
instead (a server ingesting uploads): with the ingest waiting for answers (the default) and
without (its waits made none). A BEIR folder (`corpus.jsonl`) is ingested as its first
`--documents` passages, one file each:

    python benchmarks/busy_answers.py ../shared/data/docqa-dev --home /tmp/docqa-home \
        --ingest ../shared/data/scifact --documents 3000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from reader_blend import save_result

from footnote.application import isolated_app
from footnote.core.foreground import Foreground
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import CORPUS_FOLDER, load_doc_questions, spread_by_source
from footnote.models.cpu import machine

BUSY_LOOP = "while True: pass"


def timed(ask: Any, questions: list[str]) -> list[float]:
    seconds = []
    for question in questions:
        started = time.perf_counter()
        ask(question)
        seconds.append(time.perf_counter() - started)
    return seconds


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
    }


def measured(
    folder: Path, home: Path, questions: list[str], settings: dict[str, Any], busy: int
) -> dict[str, Any]:
    """Quiet, then with `busy` busy loops beside: the answers' latency and the ratios."""
    with isolated_app("footnote-busy-", home, {**UNMEASURED, **settings}) as app:
        app.ingest([folder / CORPUS_FOLDER])
        engine = app.answer_engine()
        engine.ask(questions[0])  # models loaded and warm before anything is timed
        quiet = summary(timed(engine.ask, questions))
        loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(busy)]
        try:
            time.sleep(1.0)
            loaded = summary(timed(engine.ask, questions))
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()
    return {
        "quiet": quiet,
        "busy": loaded,
        "ratio_p50": round(loaded["p50"] / quiet["p50"], 2),
        "ratio_p90": round(loaded["p90"] / quiet["p90"], 2),
    }


class NoWaiting(Foreground):
    """Background work that never waits for answers: how an ingest ran before it did."""

    def wait(self, most: float = 0.0) -> float:
        return 0.0


def while_ingesting(
    folder: Path, home: Path, questions: list[str], ingested: Path, waits: bool
) -> dict[str, Any]:
    """Quiet, then while this process ingests `ingested` into a copy of the index at `home`."""
    import footnote.ingest.pipeline as pipeline

    with tempfile.TemporaryDirectory(prefix="footnote-busy-") as scratch:
        copy = Path(scratch) / "home"
        shutil.copytree(home, copy)
        kept = pipeline.FOREGROUND
        if not waits:
            pipeline.FOREGROUND = NoWaiting()
        try:
            with isolated_app("footnote-busy-", copy, dict(UNMEASURED)) as app:
                app.ingest([folder / CORPUS_FOLDER])
                engine = app.answer_engine()
                engine.ask(questions[0])
                quiet = summary(timed(engine.ask, questions))
                started = time.perf_counter()
                ingest = threading.Thread(target=app.ingest, args=([ingested],))
                ingest.start()
                time.sleep(1.0)
                loaded = summary(timed(engine.ask, questions))
                still_running = ingest.is_alive()
                ingest.join()
                ingest_seconds = time.perf_counter() - started
        finally:
            pipeline.FOREGROUND = kept
    return {
        "quiet": quiet,
        "ingesting": loaded,
        "ratio_p50": round(loaded["p50"] / quiet["p50"], 2),
        "ratio_p90": round(loaded["p90"] / quiet["p90"], 2),
        "ingest_still_running_after_the_answers": still_running,
        "ingest_seconds": round(ingest_seconds, 1),
    }


def as_files(beir: Path, documents: int, into: Path) -> Path:
    """The first `documents` passages of a BEIR folder's corpus written one file each."""
    into.mkdir()
    with (beir / "corpus.jsonl").open(encoding="utf-8") as lines:
        for number, line in zip(range(documents), lines, strict=False):
            passage = json.loads(line)
            text = f"{passage.get('title', '')}\n\n{passage['text']}\n"
            (into / f"{number}.txt").write_text(text, encoding="utf-8")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True, help="the index, kept for the next run")
    parser.add_argument("--busy", type=int, default=1, help="busy loops run beside")
    parser.add_argument(
        "--questions", type=int, default=20, help="answerable questions, one per document first"
    )
    parser.add_argument("--ingest", type=Path, help="a folder this process ingests while answering")
    parser.add_argument("--documents", type=int, default=3000, help="passages of a BEIR folder ingested")
    args = parser.parse_args()
    items = [i for i in spread_by_source(load_doc_questions(args.dataset), 1) if i.answerable]
    questions = [item.question for item in items[: args.questions]]
    if args.ingest is not None:
        report: dict[str, Any] = {
            "dataset": str(args.dataset),
            "questions": len(questions),
            "ingest": str(args.ingest),
        }
        with tempfile.TemporaryDirectory(prefix="footnote-busy-files-") as scratch:
            beir = (args.ingest / "corpus.jsonl").exists()
            folder = as_files(args.ingest, args.documents, Path(scratch) / "files") if beir else args.ingest
            report["documents"] = sum(1 for _ in folder.iterdir())
            for mode, waits in (("answers-first", True), ("no-waiting", False)):
                report[mode] = while_ingesting(args.dataset, args.home, questions, folder, waits)
                print(mode, report[mode], flush=True)
        report["machine"] = machine()
        save_result("busy_answers", f"{args.dataset.name}-while-ingesting", report)
        return
    modes = {"shared": {"threads": 0}, "every-core": {"threads": os.cpu_count() or 1}}
    report = {"dataset": str(args.dataset), "questions": len(questions), "busy": args.busy}
    for mode, settings in modes.items():
        report[mode] = measured(args.dataset, args.home, questions, settings, args.busy)
        print(mode, report[mode], flush=True)
    report["machine"] = machine()
    save_result("busy_answers", f"{args.dataset.name}-busy-{args.busy}", report)


if __name__ == "__main__":
    main()
