"""`--watch`: edits, additions and deletions under a followed folder reach search within seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.ingest.pipeline import IngestReport
from footnote.ingest.watch import follow
from tests.fakes import HashingEmbedder
from tests.watch_scenario import edit_add_and_delete
from tests.watch_scenario import eventually as within

WITHIN_SECONDS = 10.0


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Application, Path, list[IngestReport]]]:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "herons.md").write_text("# Herons\n\nHerons stand still in shallow water.\n", encoding="utf-8")
    (folder / "wrens.txt").write_text("Wrens sing loudly for their size.\n", encoding="utf-8")
    app = create_app(Settings(home=tmp_path / "home"), embedder=HashingEmbedder())
    app.ingest([folder])
    batches: list[IngestReport] = []
    stop = threading.Event()
    ingestor = app.ingestor(exclude=["drafts/*"])
    thread = threading.Thread(target=follow, args=(ingestor, [folder], batches.append, stop), daemon=True)
    thread.start()
    time.sleep(0.5)  # let the watcher start before the test changes files
    yield app, folder, batches
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()


def paths_found(app: Application, query: str) -> set[str]:
    return {Path(hit.path).name for hit in app.search(query, limit=10)}


def texts_found(app: Application, query: str) -> str:
    return "\n".join(hit.text for hit in app.search(query, limit=10))


def eventually(condition: Callable[[], bool]) -> bool:
    return within(condition, WITHIN_SECONDS, 0.1)


def test_search_follows_edits_additions_and_deletions(
    watched: tuple[Application, Path, list[IngestReport]],
) -> None:
    app, folder, batches = watched
    edit_add_and_delete(
        folder, lambda q: texts_found(app, q), lambda q: paths_found(app, q), WITHIN_SECONDS, 0.1
    )

    # Excluded, hidden and unsupported files never reach the index.
    (folder / "drafts").mkdir()
    (folder / "drafts" / "gulls.md").write_text("# Gulls\n\nGulls follow ferries.\n", encoding="utf-8")
    (folder / ".hidden.md").write_text("# Hidden\n\nGulls again.\n", encoding="utf-8")
    (folder / "gulls.bin").write_bytes(b"\x00gulls")
    (folder / "marker.md").write_text("# Marker\n\nA marker written last.\n", encoding="utf-8")
    assert eventually(lambda: "marker.md" in {Path(d.path).name for d in app.documents()})
    names = {Path(d.path).name for d in app.documents()}
    assert names == {"herons.md", "puffins.md", "marker.md"}
    assert app.vectors.count() == app.catalog.count_chunks()
    assert {o.status for batch in batches for o in batch.files} >= {"changed", "new", "removed"}
