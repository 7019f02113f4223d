"""`footnote ingest --watch` as a running process: `footnote search` follows edits, additions, deletions."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.watch_scenario import edit_add_and_delete

# Generous: each `footnote search` is a new process that loads the embedder before it answers.
FOLLOW_SECONDS = 120.0


def footnote_env(home: Path) -> dict[str, str]:
    return {**os.environ, "FOOTNOTE_HOME": str(home), "COLUMNS": "200"}


def search(home: Path, query: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "footnote", "search", query, "--json"],
        capture_output=True,
        text=True,
        env=footnote_env(home),
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    hits: list[dict[str, Any]] = json.loads(result.stdout)
    return hits


class Watcher:
    """A `footnote ingest --watch --json` process whose JSON lines are read as they come."""

    def __init__(self, home: Path, folder: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "footnote", "ingest", str(folder), "--watch", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=footnote_env(home),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def next_report(self, timeout: float = 300.0) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.process.kill()
            _, errors = self.process.communicate(timeout=30)
            raise AssertionError(f"no report from `footnote ingest --watch`: {errors}") from None
        report: dict[str, Any] = json.loads(line)
        return report

    def stop(self) -> None:
        self.process.kill()
        self.process.communicate(timeout=30)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Path, Watcher]]:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "herons.md").write_text("# Herons\n\nHerons stand still in shallow water.\n", encoding="utf-8")
    (folder / "wrens.txt").write_text("Wrens sing loudly for their size.\n", encoding="utf-8")
    home = tmp_path / "home"
    watcher = Watcher(home, folder)
    try:
        first = watcher.next_report()
        assert first["summary"]["new"] == 2, first
        time.sleep(2.0)  # the first report comes just before the folder watch starts
        yield home, folder, watcher
    finally:
        watcher.stop()


def texts_found(home: Path, query: str) -> str:
    return "\n".join(hit["text"] for hit in search(home, query))


def names_found(home: Path, query: str) -> set[str]:
    return {Path(hit["path"]).name for hit in search(home, query)}


def test_search_follows_a_running_watch(watched: tuple[Path, Path, Watcher]) -> None:
    home, folder, watcher = watched
    edit_add_and_delete(
        folder, lambda q: texts_found(home, q), lambda q: names_found(home, q), FOLLOW_SECONDS, 0.5
    )

    assert watcher.process.poll() is None, "the watcher keeps running after applying changes"
    statuses: set[str] = set()
    while not statuses >= {"changed", "new", "removed"}:
        statuses |= {outcome["status"] for outcome in watcher.next_report(timeout=30)["files"]}
