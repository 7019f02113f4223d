"""Answers on a busy machine: a running server's answer latency asked one question at a time,
quiet, then with busy loops running beside it on the same machine, then while it ingests uploaded
files (`footnote bench serve`). A laptop always runs something else, and a server ingests uploads
while it answers: the ratios say how much slower an answer gets for it.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from footnote.bench.load import LoadTarget, ask
from footnote.bench.queries import BenchQuery
from footnote.errors import ConfigError

BUSY_LOOP = "while True: pass"
SETTLE_SECONDS = 1.0  # after the busy loops or the uploads start, before the first question


@dataclass(frozen=True)
class Latencies:
    """Whole-answer seconds of one pass over the questions."""

    seconds: tuple[float, ...]
    failed: int

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.seconds)
        if not ordered:
            return {"p50": None, "p90": None, "answered": 0, "failed": self.failed}
        return {
            "p50": round(statistics.median(ordered), 3),
            "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
            "answered": len(ordered),
            "failed": self.failed,
        }


def asked(target: LoadTarget, questions: Sequence[str]) -> Latencies:
    """Each question asked in turn (streamed, as a chat client asks); failures counted apart."""

    async def run() -> Latencies:
        seconds, failed = [], 0
        async with target.client() as client:
            for question in questions:
                outcome = await ask(client, target, BenchQuery(question, "original"))
                if outcome.status == "ok" and outcome.latency is not None:
                    seconds.append(outcome.latency)
                else:
                    failed += 1
        return Latencies(tuple(seconds), failed)

    return asyncio.run(run())


@contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` processes that each keep one core busy, stopped on leaving."""
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]
    try:
        time.sleep(SETTLE_SECONDS)
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


class Uploads:
    """Files of a folder uploaded to the server one after another in a thread (`POST
    /v1/documents`), as a user drops a folder on the web page, while questions are asked."""

    def __init__(self, target: LoadTarget, folder: Path) -> None:
        self.files = sorted(path for path in folder.rglob("*") if path.is_file())
        if not self.files:
            raise ConfigError(f"--upload {folder}: no files in it; give a folder of documents")
        self._target = target
        self.uploaded = 0
        self.failed = 0
        self._stop = threading.Event()
        self.still_running = False  # whether files were left when the questions were done
        self._thread = threading.Thread(target=self._run, name="footnote-bench-uploads", daemon=True)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Uploading from entering until leaving (the files left then are not sent)."""
        self._thread.start()
        try:
            time.sleep(SETTLE_SECONDS)
            yield
        finally:
            self.still_running = self._thread.is_alive()
            self._stop.set()
            self._thread.join()

    def _run(self) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {self._target.api_key}"} if self._target.api_key else {}
        with httpx.Client(base_url=self._target.url, timeout=self._target.timeout, headers=headers) as client:
            for path in self.files:
                if self._stop.is_set():
                    break
                with path.open("rb") as handle:
                    response = client.post("/v1/documents", files={"file": (path.name, handle)})
                if response.status_code == 201:
                    self.uploaded += 1
                else:
                    self.failed += 1


def measure(target: LoadTarget, questions: Sequence[str], busy: int, upload: Path | None) -> dict[str, Any]:
    """Quiet, with `busy` busy loops beside (when above 0), and while `upload`'s files are
    uploaded (when given): each pass's p50 and p90, and their ratios to the quiet pass."""
    asked(target, questions[:1])  # the server's models loaded and warm before anything is timed
    quiet = asked(target, questions).summary()
    report: dict[str, Any] = {"questions": len(questions), "quiet": quiet}
    if busy:
        with busy_loops(busy):
            report["busy"] = {"loops": busy, **_against(asked(target, questions).summary(), quiet)}
    if upload is not None:
        uploads = Uploads(target, upload)
        with uploads.running():
            during = asked(target, questions).summary()
        report["uploading"] = {
            **_against(during, quiet),
            "files": len(uploads.files),
            "uploaded_while_answering": uploads.uploaded,
            "upload_failures": uploads.failed,
            "uploads_still_running_after_the_answers": uploads.still_running,
        }
    return report


def _against(loaded: dict[str, Any], quiet: dict[str, Any]) -> dict[str, Any]:
    ratios = {
        f"ratio_{key}": round(loaded[key] / quiet[key], 2) if loaded[key] and quiet[key] else None
        for key in ("p50", "p90")
    }
    return {**loaded, **ratios}
