"""The application and its HTTP API on a real Chroma server: reconciling on start, readiness,
answers with citations, and 503 with Retry-After (never a 500 or a hang) while the server is down."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from footnote.application import create_app
from footnote.config import Settings
from tests.chroma_server import ChromaServer
from tests.fakes import HashingEmbedder
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build, write_corpus


@pytest.fixture(params=["embedded", "chroma-server"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = request.getfixturevalue("chroma").url if request.param == "chroma-server" else ""
    return Settings(home=tmp_path / "home", reader="sources", vector_url=url)


def test_start_up_reconciles_vectors_with_the_catalog_both_ways(settings: Settings, tmp_path: Path) -> None:
    first = create_app(settings, embedder=HashingEmbedder())
    first.ingest([write_corpus(tmp_path / "corpus")])
    chunks = sorted(first.catalog.chunk_ids())
    lost, orphan = chunks[0], max(chunks) + 1000
    first.vectors.delete([lost])  # a vector the index lost
    first.vectors.upsert([orphan], [[1.0] + [0.0] * 255])  # a vector whose chunk never committed
    first.close()

    restarted = create_app(settings, embedder=HashingEmbedder())
    embedded = restarted.reconcile_stores()

    assert embedded == 1
    assert restarted.vectors.ids() == set(chunks)
    assert restarted.reconcile_stores() == 0


def test_a_lost_collection_is_filled_again_on_start(chroma: ChromaServer, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", vector_url=chroma.url)
    first = create_app(settings, embedder=HashingEmbedder())
    first.ingest([write_corpus(tmp_path / "corpus")])
    chunks = first.catalog.count_chunks()
    first.close()
    chroma.reset()

    server, _ = build(tmp_path, ingest=False, vector_url=chroma.url)
    with TestClient(server) as client:
        deadline = time.monotonic() + 60  # the models load and the index fills in the background
        while (ready := client.get("/readyz")).json()["status"] == "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        found = client.post("/v1/search", json={"query": "glacier ice", "max_results": 3})

    assert ready.status_code == 200, ready.json()
    assert ready.json()["stores"]["vectors"] == {"kind": "chroma-server", "status": "ok", "detail": None}
    assert create_app(settings, embedder=HashingEmbedder()).vectors.count() == chunks
    assert "glacier" in found.json()["results"][0]["snippet"].lower()


def test_answers_cite_sources_and_a_lost_server_is_503_with_retry_after(
    own_chroma: ChromaServer, tmp_path: Path
) -> None:
    server, application = build(tmp_path, [APPLE_REPLY], vector_url=own_chroma.url)
    with TestClient(server) as client:
        answer = client.post("/v1/chat/completions", json=ask_body())
        assert answer.status_code == 200, answer.json()
        assert answer.json()["citations"][0].endswith("orchard.md")
        assert client.get("/readyz").status_code == 200

        own_chroma.stop()
        ready = client.get("/readyz")
        search = client.post("/v1/search", json={"query": "apple trees", "max_results": 3})
        chat = client.post("/v1/chat/completions", json=ask_body())
        metrics = client.get("/metrics").text

        own_chroma.start()
        again = client.post("/v1/search", json={"query": "apple trees", "max_results": 3})

    assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
    vectors = ready.json()["stores"]["vectors"]
    assert vectors["kind"] == "chroma-server" and vectors["status"] == "unavailable"
    assert f"FOOTNOTE_VECTOR_URL={own_chroma.url}" in vectors["detail"]
    assert ready.json()["stores"]["catalog"] == {"kind": "embedded", "status": "ok", "detail": None}
    for refused in (search, chat):
        assert refused.status_code == 503, refused.json()
        assert int(refused.headers["Retry-After"]) > 0
        assert refused.json()["error"]["code"] == "store_unavailable"
        assert "FOOTNOTE_VECTOR_URL" in refused.json()["error"]["message"]
    # The first call to fail is counted, whichever it was (the language index's size, or the query).
    assert re.search(r'footnote_store_errors_total\{operation="\w+",store="vectors"\}', metrics)
    assert 'footnote_store_call_duration_seconds_count{operation="chunks",store="catalog"}' in metrics
    assert again.status_code == 200 and again.json()["results"]
    application.close()
