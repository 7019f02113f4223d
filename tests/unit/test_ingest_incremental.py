"""Incremental ingest: globs, --prune, the --json summary, and atomic replacement of changed files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.core.document import Block, Document
from footnote.ingest.pipeline import Ingestor
from footnote.ingest.report import Progress
from footnote.retrieval.postings import MemoryKeywordIndex
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.catalog import open_catalog
from tests.conftest import REPO
from tests.fakes import HashingEmbedder


def ingest_json(home: Path, *args: str) -> dict[str, object]:
    env = {
        **os.environ,
        "FOOTNOTE_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    command = [sys.executable, "-m", "tests.crash_child", "--", "ingest", *args, "--json"]
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_globs_prune_and_json_summary(tmp_path: Path) -> None:
    folder, home = tmp_path / "notes", tmp_path / "home"
    (folder / "drafts").mkdir(parents=True)
    for name in ("a.md", "b.md", "c.md", "notes.txt"):
        (folder / name).write_text(f"# {name}\n\nSome words about {name}.\n", encoding="utf-8")
    (folder / "drafts" / "d.md").write_text("# draft\n\nNot yet.\n", encoding="utf-8")
    first = ingest_json(home, str(folder), "--include", "*.md", "--exclude", "drafts/*")
    summary = first["summary"]
    assert isinstance(summary, dict)
    assert (summary["new"], summary["unchanged"], summary["failed"]) == (3, 0, 0)
    assert summary["chunks"] == summary["chunks_embedded"] == 3 and summary["seconds"] > 0

    (folder / "a.md").write_text("# a.md\n\nChanged words.\n", encoding="utf-8")
    (folder / "b.md").unlink()
    (folder / "e.md").write_text("# e.md\n\nA new file.\n", encoding="utf-8")
    kept = ingest_json(home, str(folder), "--include", "*.md", "--exclude", "drafts/*")["summary"]
    assert isinstance(kept, dict) and kept["removed"] == 0  # without --prune, b.md stays
    pruned = ingest_json(home, str(folder), "--include", "*.md", "--exclude", "drafts/*", "--prune")
    summary = pruned["summary"]
    assert isinstance(summary, dict)
    assert (summary["new"], summary["changed"], summary["unchanged"], summary["removed"]) == (0, 0, 3, 1)
    catalog = open_catalog(Settings(home=home))
    try:
        assert sorted(Path(d.path).name for d in catalog.list_documents()) == ["a.md", "c.md", "e.md"]
        assert "Changed words." in catalog.document_text(catalog.list_documents()[0].id)
    finally:
        catalog.close()


@pytest.mark.parametrize("postings", [False, True], ids=["fts5", "memory-postings"])
def test_a_changed_file_is_replaced_atomically(tmp_path: Path, postings: bool) -> None:
    """A reader on its own connection sees the old version or the new one, never both or neither."""
    folder = tmp_path / "notes"
    folder.mkdir()
    path = folder / "otters.md"
    versions = [
        "# Otters\n\n" + "\n\n".join(f"## Part {i}\n\nOtters version {tag} paragraph {i}." for i in range(6))
        for tag in ("alpha", "beta")
    ]
    path.write_text(versions[0], encoding="utf-8")
    embedder = HashingEmbedder()
    app = create_app(Settings(home=tmp_path / "home", chunk_tokens=16, chunk_overlap=0), embedder=embedder)
    app.ingest([folder])
    reader = open_catalog(app.settings)  # a connection (pool) of its own
    keyword_index = MemoryKeywordIndex(reader) if postings or not reader.searches_keywords else None
    retriever = HybridRetriever(reader, app.vectors, embedder, keyword_index=keyword_index)
    seen: list[set[str]] = []
    done = threading.Event()

    def search() -> None:
        while not done.is_set():
            for mode in ("hybrid", "keyword", "dense"):
                hits = retriever.search("otters version paragraph", RetrievalParams(limit=50, mode=mode))
                seen.append({tag for hit in hits for tag in ("alpha", "beta") if tag in hit.text})

    thread = threading.Thread(target=search)
    thread.start()
    try:
        for round_number in range(1, 9):
            path.write_text(versions[round_number % 2], encoding="utf-8")
            searched = len(seen)
            assert app.ingest([folder]).count("changed") == 1
            # Let the reader finish a few searches between ingests, however slow the machine.
            deadline = time.monotonic() + 10
            while len(seen) < searched + 3 and time.monotonic() < deadline:
                time.sleep(0.005)
    finally:
        done.set()
        thread.join()
        reader.close()
    assert len(seen) > 10
    assert all(len(tags) == 1 for tags in seen), [tags for tags in seen if len(tags) != 1][:5]


def test_discover_applies_globs_and_says_why_files_are_left_out(tmp_path: Path) -> None:
    from footnote.ingest.pipeline import discover

    for name in ("a.md", "b.txt", "drafts/c.md", "img/d.png", ".git/e.md", "f.tar.gz"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    files, left_out = discover([tmp_path], include=["*.md", "*.gz", "*.png"], exclude=["drafts"])
    assert [p.name for p in files] == ["a.md"]
    assert {(Path(o.path).name, o.status) for o in left_out} == {
        ("d.png", "skipped"),
        ("f.tar.gz", "skipped"),
    }
    files, left_out = discover([tmp_path / "img" / "d.png", tmp_path / "missing.md"])
    assert not files
    assert {(Path(o.path).name, o.status) for o in left_out} == {
        ("d.png", "failed"),
        ("missing.md", "failed"),
    }
    assert all(o.error for o in left_out)


def test_progress_reports_each_file_and_each_window_of_embedded_chunks(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "home"), embedder=HashingEmbedder())
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (folder / name).write_text(f"# {name}\n\nSome words about {name}.\n", encoding="utf-8")
    seen: list[Progress] = []
    ingestor = Ingestor(app.catalog, app.vectors, app.embedder, window_chunks=2)
    report = ingestor.ingest([folder], progress=seen.append)
    assert report.count("new") == 3 and report.chunks_embedded == 3
    steps = [(p.stage, p.done, p.total) for p in seen]
    assert steps == [("file", 1, 3), ("embed", 2, 2), ("file", 2, 3), ("file", 3, 3), ("embed", 3, 3)]
    assert [Path(p.outcome.path).name for p in seen if p.outcome is not None] == ["a.md", "b.md", "c.md"]

    # Documents built in memory go through the same loop; their progress is that of embedding.
    seen.clear()
    documents = [
        Document(f"/memory/{n}", "text", n, f"Words of {n}.", [Block(f"Words of {n}.", 0, 13)]) for n in "xyz"
    ]
    report = ingestor.ingest_documents(documents, progress=seen.append)
    assert report.count("new") == 3 and report.chunks_embedded == 3
    assert [(p.stage, p.done, p.total) for p in seen] == [("embed", 2, 2)]
