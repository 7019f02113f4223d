"""`footnote ingest` (or `serve`) in a child process that SIGKILLs itself at a chosen point.

    python -m tests.crash_child [NAME:N:before|after] -- ingest FOLDER [options]
    python -m tests.crash_child [NAME:N:before|after] -- serve --port N

runs the real CLI (`ingest` with the hashing embedder, on real SQLite and Chroma files
or the shared stores; `serve` with the models its settings name), and kills the process
with SIGKILL just before or after the N-th call of the named operation, so tests can
check what a crash at that moment leaves behind.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from footnote.application import Application, create_app
from footnote.cli import main as cli
from footnote.config import Settings
from footnote.ingest.pipeline import Ingestor
from footnote.store.chroma_server import ChromaServerVectorIndex
from footnote.store.postgres import PostgresCatalog
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.fakes import HashingEmbedder

# Chunks per stored window: small, so a corpus of a few files takes several windows.
WINDOW_CHUNKS = 4

CATALOGS = (SqliteCatalog, PostgresCatalog)
VECTORS = (ChromaVectorIndex, ChromaServerVectorIndex)
TARGETS: dict[str, tuple[tuple[type, ...], str]] = {
    "parse": ((Ingestor,), "_parse_file"),
    "embed": ((HashingEmbedder,), "embed_many"),
    "upsert": (VECTORS, "upsert"),
    "vector-delete": (VECTORS, "delete"),
    "store": (CATALOGS, "replace_documents"),
    "prune": (CATALOGS, "delete_documents"),
}


def arm(spec: str) -> None:
    name, count, when = spec.split(":")
    owners, attribute = TARGETS[name]
    calls = 0

    def armed(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: object, *args: object, **kwargs: object) -> Any:
            nonlocal calls
            calls += 1
            if calls == int(count) and when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            result = original(self, *args, **kwargs)
            if calls == int(count) and when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return wrapper

    for owner in owners:
        setattr(owner, attribute, armed(getattr(owner, attribute)))


def open_app() -> Application:
    return create_app(Settings(), embedder=HashingEmbedder())


def main() -> None:
    separator = sys.argv.index("--")
    for spec in sys.argv[1:separator]:
        arm(spec)
    original_ingestor = Application.ingestor

    def small_windows(self: Application, *args: Any, **kwargs: Any) -> Ingestor:
        ingestor = original_ingestor(self, *args, **kwargs)
        ingestor.window_chunks = WINDOW_CHUNKS
        return ingestor

    Application.ingestor = small_windows  # type: ignore[method-assign]
    cli.open_app = open_app
    sys.argv = ["footnote", *sys.argv[separator + 1 :]]
    cli.run()


if __name__ == "__main__":
    main()
