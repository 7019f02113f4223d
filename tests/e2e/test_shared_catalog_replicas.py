"""Two `footnote serve` processes on one PostgreSQL catalog and one Chroma server, with the real models.

A file uploaded through replica A is found and cited by replica B; deleted through B, it is
neither found nor cited by A. Replica A killed (SIGKILL) in the middle of an ingest and
started again finishes it, and the shared stores end as after an ingest never interrupted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.models.base import Embedder
from footnote.store.catalog import Catalog
from footnote.store.chroma_server import ChromaServerVectorIndex
from footnote.store.postgres import PostgresCatalog
from tests.chroma_server import ChromaServer
from tests.conftest import REPO
from tests.e2e.conftest import API_KEY, RunningServer, footnote_env, free_port, stop_process, wait_until_ready
from tests.integration.test_ingest_crash import RIVERS, write_phase_a
from tests.postgres_server import PostgresServer

NOTE = "quokka-orchestra.md"
TEXT = (
    "# The quokka orchestra\n\n"
    "The quokka orchestra of Zanzibar plays every Tuesday at dawn on the harbour steps.\n"
)
QUESTION = "When does the quokka orchestra of Zanzibar play?"
# Small chunks, so that the river files take several windows of the killed replica's ingest.
CHUNKING = {"FOOTNOTE_CHUNK_TOKENS": "40", "FOOTNOTE_CHUNK_OVERLAP": "8"}
KILL_POINT = "upsert:3:after"  # the third window's vectors written, its catalog transaction open
ELBE_QUESTION = "Where does the Elbe meet the North Sea?"


class Replicas:
    """`footnote serve` processes named "a" and "b" on the same shared stores."""

    def __init__(self, homes: dict[str, Path], catalog_url: str, vector_url: str) -> None:
        self.homes = homes
        self.stores = {"FOOTNOTE_CATALOG_URL": catalog_url, "FOOTNOTE_VECTOR_URL": vector_url}
        self.servers: dict[str, RunningServer] = {}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, kill: str | None = None) -> subprocess.Popen[bytes]:
        """Start replica `name`; with `kill`, one that SIGKILLs itself there (tests/crash_child.py)."""
        home = self.homes[name]
        port = free_port()
        server = RunningServer(f"http://127.0.0.1:{port}", API_KEY, home, home / f"server-{port}.log")
        env = footnote_env(home, FOOTNOTE_API_KEY=API_KEY, **self.stores, **CHUNKING)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
        program = ["tests.crash_child", kill, "--"] if kill else ["footnote"]
        command = [sys.executable, "-m", *program, "serve", "--port", str(port)]
        with open(server.log, "wb") as log:
            process = subprocess.Popen(
                command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self.servers[name], self.processes[name] = server, process
        return process

    def ready(self) -> None:
        for name, server in self.servers.items():
            wait_until_ready(server, self.processes[name])

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        self.servers.pop(name)
        if process.poll() is None:
            stop_process(process)

    def close(self) -> None:
        for name in list(self.processes):
            self.stop(name)


@pytest.fixture(scope="module")
def stores(postgres_server: PostgresServer, _shared_chroma: ChromaServer) -> tuple[str, ChromaServer]:
    _shared_chroma.reset()
    return postgres_server.create_database("replicas"), _shared_chroma


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, stores: tuple[str, ChromaServer]
) -> Iterator[Replicas]:
    catalog_url, chroma = stores
    homes = {name: tmp_path_factory.mktemp(f"replica-{name}") for name in ("a", "b")}
    running = Replicas(homes, catalog_url, chroma.url)
    try:
        running.start("a")
        running.start("b")
        running.ready()
        yield running
    finally:
        running.close()


def call(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.api_key}"}
    response = httpx.request(method, f"{server.base_url}{path}", headers=headers, timeout=300, **kwargs)
    assert response.status_code < 300, f"{response.status_code} {response.text}\n{server.log_tail()}"
    return response


def upload(server: RunningServer, path: Path) -> dict[str, Any]:
    with path.open("rb") as content:
        files = {"file": (path.name, content, "text/markdown")}
        document: dict[str, Any] = call(server, "POST", "/v1/documents", files=files).json()
    return document


def found_urls(server: RunningServer, query: str) -> list[str]:
    results = call(server, "POST", "/v1/search", json={"query": query, "max_results": 10}).json()["results"]
    return [result["url"] for result in results]


def cited_urls(server: RunningServer, question: str) -> list[str]:
    answer = call(server, "POST", "/query", json={"q": question}).json()
    return [source["url"] for source in answer["sources"]]


def test_an_upload_on_one_replica_is_cited_by_the_other_and_a_delete_reaches_both(
    replicas: Replicas, tmp_path: Path
) -> None:
    first, second = replicas.servers["a"], replicas.servers["b"]
    note = tmp_path / NOTE
    note.write_text(TEXT, encoding="utf-8")

    document = upload(first, note)
    assert document["status"] == "new"

    assert any(url.endswith(NOTE) for url in found_urls(second, "quokka orchestra Zanzibar"))
    assert any(url.endswith(NOTE) for url in cited_urls(second, QUESTION))
    assert any(url.endswith(NOTE) for url in found_urls(first, "quokka orchestra Zanzibar"))

    call(second, "DELETE", f"/v1/documents/{document['id']}")

    for replica in (first, second):
        assert not any(url.endswith(NOTE) for url in found_urls(replica, "quokka orchestra Zanzibar"))
        assert not any(url.endswith(NOTE) for url in cited_urls(replica, QUESTION))
        listed = call(replica, "GET", "/v1/documents").json()["data"]
        assert all(not item["path"].endswith(NOTE) for item in listed)


def edit_rivers(folder: Path) -> None:
    """Every river file changes, so that an ingest again of them all takes several windows."""
    for river in RIVERS:
        path = folder / f"{river.lower()}.md"
        text = path.read_text(encoding="utf-8").replace("barley", "rye")
        path.write_text(text + f"\n## Today\n\nTourists take boat trips on the {river}.\n", encoding="utf-8")
    elbe = folder / "elbe.md"
    delta = "\n## Delta\n\nThe Elbe meets the North Sea at Cuxhaven.\n"
    elbe.write_text(elbe.read_text(encoding="utf-8") + delta, encoding="utf-8")


def river_state(catalog: Catalog, folder: Path) -> dict[str, Any]:
    """The river documents under `folder`, by file name: content hash and chunks in order."""
    records = [d for d in catalog.list_documents() if Path(d.path).parent == folder.resolve()]
    chunks = catalog.chunks(catalog.chunk_id_list())
    return {
        Path(d.path).name: (
            d.content_hash,
            [c.text for c in sorted(chunks.values(), key=lambda c: c.ordinal) if c.document_id == d.id],
        )
        for d in records
    }


def uninterrupted_run(folder: Path, home: Path, embedder: Embedder) -> dict[str, Any]:
    """The rivers ingested in phase A and then again edited, by one process never killed."""
    write_phase_a(folder)
    chunking = {"chunk_tokens": int(CHUNKING["FOOTNOTE_CHUNK_TOKENS"]), "chunk_overlap": 8}
    app = create_app(Settings(home=home, **chunking), embedder=embedder)
    try:
        app.ingest([folder])
        edit_rivers(folder)
        app.ingest([folder])
        return river_state(app.catalog, folder)
    finally:
        app.close()


def test_a_replica_killed_mid_ingest_and_started_again_ends_as_an_uninterrupted_run(
    replicas: Replicas, stores: tuple[str, ChromaServer], tmp_path: Path, real_embedder: Embedder
) -> None:
    catalog_url, chroma = stores
    expected = uninterrupted_run(tmp_path / "rivers", tmp_path / "reference", real_embedder)
    write_phase_a(tmp_path / "upload")
    for river in RIVERS:
        upload(replicas.servers["a"], tmp_path / "upload" / f"{river.lower()}.md")
    uploads = replicas.homes["a"] / "uploads"
    replicas.stop("a")
    edit_rivers(uploads)

    killed = replicas.start("a", kill=KILL_POINT)
    replicas.ready()
    server = replicas.servers["a"]
    with pytest.raises(httpx.TransportError):
        httpx.post(
            f"{server.base_url}/v1/documents/reindex",
            headers={"Authorization": f"Bearer {API_KEY}"},
            timeout=300,
        )
    assert killed.wait(timeout=60) == -signal.SIGKILL, f"{KILL_POINT} was never reached"
    replicas.stop("a")
    catalog, vectors = PostgresCatalog(catalog_url), ChromaServerVectorIndex(chroma.url, None, None, None)
    try:
        halfway = river_state(catalog, uploads)
        # Truly mid-ingest: some files are in their new version, others not yet, and the vectors of
        # the window whose transaction died are in the index under ids the catalog never committed.
        done = sum(halfway[name][0] == expected[name][0] for name in expected)
        assert 0 < done < len(expected)
        assert vectors.ids() - set(catalog.chunk_ids())

        replicas.start("a")
        replicas.ready()
        report = call(replicas.servers["a"], "POST", "/v1/documents/reindex").json()
        assert report["summary"]["changed"] == len(expected) - done  # the rest is picked up again

        assert river_state(catalog, uploads) == expected
        ids = catalog.chunk_ids()
        assert vectors.ids() == set(ids) and all(ids.values()) and not catalog.tombstones()
    finally:
        catalog.close()
    for name in ("a", "b"):
        cited = cited_urls(replicas.servers[name], ELBE_QUESTION)
        assert any(url.endswith("elbe.md") for url in cited), (name, cited)
