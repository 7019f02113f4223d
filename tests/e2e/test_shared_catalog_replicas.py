"""Two `footnote serve` processes on one PostgreSQL catalog, with the real models.

A file uploaded through replica A is found and cited by replica B; deleted through B, it is
neither found nor cited by A, even though A's own vector index still holds its vectors (each
replica keeps its vectors in its own FOOTNOTE_HOME here: results pass through the catalog).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import API_KEY, RunningServer, footnote_env, free_port, wait_until_ready
from tests.postgres_server import PostgresServer

NOTE = "quokka-orchestra.md"
TEXT = (
    "# The quokka orchestra\n\n"
    "The quokka orchestra of Zanzibar plays every Tuesday at dawn on the harbour steps.\n"
)
QUESTION = "When does the quokka orchestra of Zanzibar play?"


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[tuple[RunningServer, RunningServer]]:
    catalog_url = postgres_server.create_database("replicas")
    started: list[tuple[RunningServer, subprocess.Popen[bytes]]] = []
    try:
        for name in ("a", "b"):
            home = tmp_path_factory.mktemp(f"replica-{name}")
            port = free_port()
            server = RunningServer(f"http://127.0.0.1:{port}", API_KEY, home, home / "server.log")
            env = footnote_env(home, FOOTNOTE_API_KEY=API_KEY, FOOTNOTE_CATALOG_URL=catalog_url)
            with open(server.log, "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "footnote", "serve", "--port", str(port)],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            started.append((server, process))
        for server, process in started:
            wait_until_ready(server, process)
        yield started[0][0], started[1][0]
    finally:
        for _, process in started:
            process.send_signal(signal.SIGTERM)
        for _, process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def call(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.api_key}"}
    response = httpx.request(method, f"{server.base_url}{path}", headers=headers, timeout=300, **kwargs)
    assert response.status_code < 300, f"{response.status_code} {response.text}\n{server.log_tail()}"
    return response


def found_urls(server: RunningServer, query: str) -> list[str]:
    results = call(server, "POST", "/v1/search", json={"query": query, "max_results": 10}).json()["results"]
    return [result["url"] for result in results]


def cited_urls(server: RunningServer, question: str) -> list[str]:
    answer = call(server, "POST", "/query", json={"q": question}).json()
    return [source["url"] for source in answer["sources"]]


def test_an_upload_on_one_replica_is_cited_by_the_other_and_a_delete_reaches_both(
    replicas: tuple[RunningServer, RunningServer], tmp_path: Path
) -> None:
    first, second = replicas
    note = tmp_path / NOTE
    note.write_text(TEXT, encoding="utf-8")

    with note.open("rb") as upload:
        document = call(
            first, "POST", "/v1/documents", files={"file": (NOTE, upload, "text/markdown")}
        ).json()
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
