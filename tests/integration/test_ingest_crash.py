"""Kill `footnote ingest` (SIGKILL) at several points, run it again, and compare with an uninterrupted run.

Each scenario ingests a corpus (phase A), then changes it (edits, an addition, a
deletion) and ingests again with --prune (phase B). One of the runs is killed at
a chosen point and then simply run again. The catalog (documents, chunks, ids)
and the vector index (ids and vectors) must end exactly as in a run never killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.conftest import REPO

# The embedded stores' crash recovery; the shared stores' is tests/e2e/test_shared_catalog_replicas.py.
pytestmark = pytest.mark.embedded_stores

SENTENCES = [
    "The {0} river floods its valley every spring after the snow melts.",
    "Farmers along the {0} grow barley and keep bees in the orchards.",
    "A stone bridge over the {0} was rebuilt in the eighteenth century.",
    "Ferries still cross the {0} where the water is deepest.",
]
RIVERS = ["Arno", "Tagus", "Loire", "Elbe", "Oder", "Douro", "Rhone", "Vistula"]


def write_phase_a(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for river in RIVERS:
        sections = "\n\n".join(
            f"## Part {i}\n\n" + " ".join(s.format(river) for s in SENTENCES) for i in range(3)
        )
        (folder / f"{river.lower()}.md").write_text(f"# {river}\n\n{sections}\n", encoding="utf-8")


def write_phase_b(folder: Path) -> None:
    (folder / "arno.md").write_text("# Arno\n\nThe Arno flows through Florence and Pisa.\n", encoding="utf-8")
    (folder / "elbe.md").write_text(
        (folder / "elbe.md").read_text(encoding="utf-8") + "\n## Delta\n\nThe Elbe meets the North Sea.\n",
        encoding="utf-8",
    )
    (folder / "oder.md").unlink()
    (folder / "thames.md").write_text("# Thames\n\nThe Thames flows through London.\n", encoding="utf-8")


def run_child(home: Path, folder: Path, kill: str | None, *options: str) -> int:
    env = {
        **os.environ,
        "FOOTNOTE_HOME": str(home),
        "FOOTNOTE_CHUNK_TOKENS": "40",
        "FOOTNOTE_CHUNK_OVERLAP": "8",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    command = [sys.executable, "-m", "tests.crash_child", *([kill] if kill else []), "--"]
    command += ["ingest", str(folder), "--json", *options]
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    if kill is None:
        assert done.returncode == 0, done.stderr
    return done.returncode


def snapshot(home: Path, folder: Path) -> dict[str, Any]:
    catalog = SqliteCatalog(home / "catalog.sqlite3")
    try:
        documents = [
            (d.id, Path(d.path).relative_to(folder).as_posix(), d.content_hash)
            for d in catalog.list_documents()
        ]
        state = catalog.chunk_ids()
        records = catalog.chunks(list(state))
        chunks = sorted((i, r.document_id, r.ordinal, r.text, state[i]) for i, r in records.items())
        tombstones = catalog.tombstones()
    finally:
        catalog.close()
    index = ChromaVectorIndex(home / "vectors", None, None)
    ids = sorted(index.ids())
    stored = index._collection.get(ids=[str(i) for i in ids], include=["embeddings"])
    vectors = {
        int(i): [round(float(x), 5) for x in v]
        for i, v in zip(stored["ids"], stored["embeddings"], strict=True)
    }
    return {
        "documents": documents,
        "chunks": chunks,
        "tombstones": tombstones,
        "vector_ids": ids,
        "vectors": vectors,
    }


def history(tmp: Path, name: str, kill_a: str | None, kill_b: str | None) -> dict[str, Any]:
    """Phase A then phase B in a home of their own; a killed run is run again, as a user would."""
    folder, home = tmp / name / "corpus", tmp / name / "home"
    write_phase_a(folder)
    if kill_a:
        assert run_child(home, folder, kill_a) == -signal.SIGKILL, f"{kill_a} was never reached"
    run_child(home, folder, None)
    write_phase_b(folder)
    if kill_b:
        assert run_child(home, folder, kill_b, "--prune") == -signal.SIGKILL, f"{kill_b} was never reached"
    run_child(home, folder, None, "--prune")
    return snapshot(home, folder)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    state = history(tmp_path_factory.mktemp("crash"), "reference", None, None)
    assert state["vector_ids"] == [chunk[0] for chunk in state["chunks"]]
    assert all(chunk[4] for chunk in state["chunks"]) and not state["tombstones"]
    assert not any(path == "oder.md" for _, path, _ in state["documents"])
    return state


@pytest.mark.parametrize(
    ("kill_a", "kill_b"),
    [
        ("parse:5:before", None),  # first windows stored, the rest not yet parsed
        ("upsert:3:after", None),  # vectors written, their catalog transaction never committed
        ("store:2:after", None),  # committed; later windows missing
        (None, "embed:1:before"),  # changed files parsed, nothing stored yet
        (None, "store:1:after"),  # new versions committed, old vectors not yet deleted
        (None, "prune:1:after"),  # vanished file's document deleted, its vectors not yet
    ],
)
def test_a_killed_ingest_run_again_ends_as_if_never_killed(
    tmp_path: Path, uninterrupted: dict[str, Any], kill_a: str | None, kill_b: str | None
) -> None:
    assert history(tmp_path, "killed", kill_a, kill_b) == uninterrupted


def test_kill_points_are_real(tmp_path: Path) -> None:
    """A killed run really leaves work undone, or the comparison above would prove nothing."""
    folder, home = tmp_path / "corpus", tmp_path / "home"
    write_phase_a(folder)
    assert run_child(home, folder, "upsert:3:after") == -signal.SIGKILL
    state = snapshot(home, folder)
    committed = {chunk[0] for chunk in state["chunks"]}
    assert 0 < len(state["documents"]) < len(RIVERS)
    assert set(state["vector_ids"]) - committed, "the uncommitted window's vectors should be orphaned"
    shutil.rmtree(home)
