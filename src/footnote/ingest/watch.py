"""Follow folders and apply their changes to the index as they happen (`footnote ingest --watch`).

Changes arrive from watchfiles in debounced batches. Files added or changed are
ingested (unchanged content is still skipped by hash); files or folders that
disappeared have their documents removed. Hidden files, files of unsupported
types and files the include/exclude globs leave out are ignored, so editors'
temporary files never reach the index.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from footnote.ingest.discovery import select_path
from footnote.ingest.loaders import unsupported_reason
from footnote.ingest.pipeline import Ingestor
from footnote.ingest.report import FileOutcome, IngestReport

DEBOUNCE_MS = 300


def apply_changes(ingestor: Ingestor, roots: Sequence[Path], changed: Iterable[Path]) -> IngestReport:
    """Ingest the changed files under `roots` that are still there; remove those that are gone."""
    started = time.perf_counter()
    present: list[Path] = []
    gone: list[Path] = []
    for path in dict.fromkeys(_with_folder_contents(changed)):
        if path.is_file():
            root = next((r for r in roots if path == r or r in path.parents), None)
            relative = path.name if root is None or root == path else path.relative_to(root).as_posix()
            if select_path(relative, ingestor.include, ingestor.exclude) and unsupported_reason(path) is None:
                present.append(path)
        elif not path.exists():
            gone.append(path)
    report = ingestor.ingest(present) if present else IngestReport()
    removed = ingestor.remove_paths(gone)
    report.files.extend(removed)
    if removed:
        ingestor.reconcile()
    report.seconds = time.perf_counter() - started
    return report


def _with_folder_contents(changed: Iterable[Path]) -> Iterator[Path]:
    """The changed paths, each folder followed by the files under it: files written into a new
    folder before the watcher began to watch it raise no events of their own."""
    for path in changed:
        yield path
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file())


def follow(
    ingestor: Ingestor,
    roots: Sequence[Path],
    on_batch: Callable[[IngestReport], None],
    stop: threading.Event | None = None,
    debounce_ms: int = DEBOUNCE_MS,
) -> None:
    """Apply changes under `roots` until `stop` is set (or the process is interrupted)."""
    from watchfiles import watch

    folders = [root.resolve() for root in roots]
    for changes in watch(*folders, debounce=debounce_ms, step=50, stop_event=stop, recursive=True):
        report = apply_changes(ingestor, folders, (Path(path) for _, path in changes))
        if report.files:
            on_batch(report)


__all__ = ["DEBOUNCE_MS", "FileOutcome", "apply_changes", "follow"]
