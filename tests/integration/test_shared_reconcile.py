"""A full reconciliation on one replica while another replica's ingest has written vectors inside
a catalog transaction not yet committed: those vectors are not orphans, and must survive."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.models.base import Vector
from footnote.store import postgres
from footnote.store.moving import drift
from footnote.store.vectors import Metadata
from tests.chroma_server import ChromaServer
from tests.fakes import HashingEmbedder

STRAY = 10**9  # a vector whose transaction died long ago: an orphan indeed


def replica(home: Path, catalog_url: str, vector_url: str) -> Application:
    settings = Settings(home=home, catalog_url=catalog_url, vector_url=vector_url)
    return create_app(settings, embedder=HashingEmbedder())


@pytest.fixture
def shared_replicas(
    tmp_path: Path, catalog_url: str, chroma: ChromaServer
) -> Iterator[tuple[Application, Application]]:
    """Two replicas' applications on one PostgreSQL catalog and one Chroma server."""
    yield from filled(tmp_path, *(replica(tmp_path / name, catalog_url, chroma.url) for name in "ab"))


@pytest.fixture(params=["shared", "embedded"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Application, Application]]:
    """Two replicas on the shared stores, or two processes' applications on one embedded home."""
    if request.param == "shared":
        yield request.getfixturevalue("shared_replicas")
    else:
        yield from filled(tmp_path, *(replica(tmp_path / "home", "", "") for _ in "ab"))


def filled(
    tmp_path: Path, first: Application, second: Application
) -> Iterator[tuple[Application, Application]]:
    """The two, with one document committed (a reconcile keeps it) and a stray vector (it goes)."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "tides.md").write_text(
        "# Tides\n\nSpring tides follow the full and the new moon.\n", encoding="utf-8"
    )
    first.ingest([tmp_path / "corpus"])
    first.vectors.upsert([STRAY], [[1.0] + [0.0] * (first.embedder.dimension - 1)])
    yield first, second
    first.close()
    second.close()


class HeldIngest:
    """An ingest on `app` that stops inside its catalog transaction, just after writing its vectors."""

    def __init__(self, app: Application, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.written, self.release = threading.Event(), threading.Event()
        upsert = app.vectors.upsert

        def upsert_then_hold(
            ids: Sequence[int], vectors: Sequence[Vector], metadata: Sequence[Metadata] | None = None
        ) -> None:
            upsert(ids, vectors, metadata)
            self.written.set()
            assert self.release.wait(120), "the test never let the ingest commit"

        monkeypatch.setattr(app.vectors, "upsert", upsert_then_hold)
        self.thread = threading.Thread(target=app.ingest, args=([path],))
        self.thread.start()
        assert self.written.wait(120), "the ingest never wrote its vectors"

    def commit(self) -> None:
        self.release.set()
        self.thread.join(timeout=120)


def in_background(work: Callable[[], Any]) -> threading.Thread:
    thread = threading.Thread(target=work)
    thread.start()
    return thread


def writer_blocked(app: Application) -> bool:
    """Is a lock request waiting in the catalog's database? SQLite cannot say: a pause instead."""
    catalog = app.catalog
    if not isinstance(catalog, postgres.PostgresCatalog):
        time.sleep(0.5)
        return True
    with psycopg.connect(catalog.url) as connection:
        row = connection.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
    return bool(row and row[0])


def test_a_reconcile_waits_for_another_replicas_open_transaction_and_keeps_its_vectors(
    replicas: tuple[Application, Application], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = replicas
    (tmp_path / "corpus" / "moon.md").write_text("# Moon\n\nThe moon pulls the sea.\n", encoding="utf-8")
    held = HeldIngest(first, tmp_path / "corpus" / "moon.md", monkeypatch)
    held_ids = first.vectors.ids() - set(second.catalog.chunk_ids())
    assert held_ids - {STRAY}, "the held ingest's vectors are in the index, its chunks not committed"
    waiting, wait_for_writers = threading.Event(), second.catalog.wait_for_writers

    def announced_wait() -> bool:
        waiting.set()  # the index is listed, the held vectors in that listing
        return wait_for_writers()

    monkeypatch.setattr(second.catalog, "wait_for_writers", announced_wait)
    reconcile = in_background(second.reconcile_stores)
    assert waiting.wait(120), "the reconcile never came to wait for writers"
    deadline = time.monotonic() + 30  # a bound, never a measured time
    while reconcile.is_alive() and not writer_blocked(second) and time.monotonic() < deadline:
        time.sleep(0.05)
    held.commit()  # the reconcile waits for this commit; one that did not wait has deleted by now
    reconcile.join(timeout=120)

    found = drift(second.catalog, second.vectors)
    assert held_ids - {STRAY} <= second.vectors.ids()
    assert STRAY not in second.vectors.ids()
    assert found.in_step and not found.pending and found.vectors == found.chunks


def test_a_reconcile_that_cannot_wait_long_enough_deletes_no_vectors(
    shared_replicas: tuple[Application, Application], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = shared_replicas
    monkeypatch.setattr(postgres, "WRITERS_WAIT_MS", 100)
    (tmp_path / "corpus" / "moon.md").write_text("# Moon\n\nThe moon pulls the sea.\n", encoding="utf-8")
    held = HeldIngest(first, tmp_path / "corpus" / "moon.md", monkeypatch)
    held_ids = first.vectors.ids() - set(second.catalog.chunk_ids())

    second.reconcile_stores()  # the held transaction outlasts the wait: nothing is deleted
    kept = second.vectors.ids()
    held.commit()

    assert held_ids <= kept and STRAY in kept
    again = second.ingestor()
    again.reconcile(full=True)  # with no transaction open, the true orphan goes
    found = drift(second.catalog, second.vectors)
    assert found.in_step and found.vectors_without_chunks == [] and STRAY not in second.vectors.ids()
