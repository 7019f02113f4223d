"""Search, query, embeddings, models, documents and health routes with the test-double models."""

from __future__ import annotations

import base64
import struct
import time
from pathlib import Path

from fastapi.testclient import TestClient

from tests.fakes import HashingEmbedder
from tests.unit.server_fixtures import APPLE_REPLY, build


def test_search_has_the_perplexity_shape(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        one = client.post("/v1/search", json={"query": "glacier ice", "max_results": 1}).json()
        many = client.post("/v1/search", json={"query": ["glacier", "apple"], "max_tokens_per_page": 5})
    assert set(one) == {"id", "results"} and len(one["results"]) == 1
    hit = one["results"][0]
    assert hit["url"].endswith("glaciers.txt") and "dense ice" in hit["snippet"]
    assert {"title", "url", "snippet", "date", "last_updated"} <= set(hit)
    grouped = many.json()["results"]
    assert len(grouped) == 2 and all(len(group) == 2 for group in grouped)
    assert all(len(result["snippet"]) <= 21 for group in grouped for result in group)


def test_query_shapes_answer_with_sources(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY, APPLE_REPLY])
    with TestClient(server) as client:
        v1 = client.post(
            "/v1/query", json={"query": "What do apple trees need?", "source_preference": "glaciers"}
        )
        simple = client.post("/query", json={"q": "What do apple trees need?", "max_results": 1})
    assert v1.status_code == 200 and simple.status_code == 200
    preferred = v1.json()["sources"]
    assert preferred[0]["url"].endswith("glaciers.txt")  # preference puts it first
    assert set(preferred[0]) == {"title", "url", "score"}
    body = simple.json()
    assert body["answer"].startswith("Apple trees need a cold winter") and len(body["sources"]) == 1


def test_embeddings_as_floats_and_base64(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    expected = HashingEmbedder().embed_batch(["cold winter", "dense ice"])
    with TestClient(server) as client:
        floats = client.post("/v1/embeddings", json={"input": ["cold winter", "dense ice"], "model": "x"})
        packed = client.post("/v1/embeddings", json={"input": "cold winter", "encoding_format": "base64"})
        tokens = client.post("/v1/embeddings", json={"input": [[1, 2, 3]]})
        wrong_size = client.post("/v1/embeddings", json={"input": "a", "dimensions": 3})
        empty = client.post("/v1/embeddings", json={"input": []})
    body = floats.json()
    assert body["object"] == "list" and body["model"] == "hashing" and body["usage"]["prompt_tokens"] > 0
    assert [item["index"] for item in body["data"]] == [0, 1]
    assert body["data"][1]["embedding"] == expected[1]
    raw = base64.b64decode(packed.json()["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == [
        struct.unpack("<f", struct.pack("<f", v))[0] for v in expected[0]
    ]
    assert tokens.status_code == 400 and "token arrays" in tokens.json()["error"]["message"]
    assert wrong_size.status_code == 400 and wrong_size.json()["error"]["param"] == "dimensions"
    assert empty.status_code == 422


def test_models_list_and_get(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        listed = client.get("/v1/models").json()
        one = client.get("/v1/models/scripted")
        missing = client.get("/v1/models/gpt-5")
    assert [model["id"] for model in listed["data"]] == ["scripted", "hashing"]
    assert listed["data"][0]["object"] == "model" and listed["data"][0]["owned_by"] == "footnote"
    assert one.json()["id"] == "scripted"
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"


def test_documents_upload_list_get_reindex_delete(tmp_path: Path) -> None:
    server, application = build(tmp_path)
    text = b"Lighthouses use Fresnel lenses to send their beam far out to sea.\n"
    with TestClient(server) as client:
        created = client.post("/v1/documents", files={"file": ("lights.txt", text, "text/plain")})
        again = client.post("/v1/documents", files={"file": ("lights.txt", text, "text/plain")})
        listed = client.get("/v1/documents").json()["data"]
        document_id = created.json()["id"]
        fetched = client.get(f"/v1/documents/{document_id}")
        reindexed = client.post("/v1/documents/reindex").json()
        hits = client.post("/v1/search", json={"query": "Fresnel lenses"}).json()["results"]
        deleted = client.delete(f"/v1/documents/{document_id}")
        gone = client.get(f"/v1/documents/{document_id}")
        unknown = client.delete("/v1/documents/999999")
        not_a_number = client.get("/v1/documents/abc")
        huge = client.get(f"/v1/documents/{2**70}")
    stored = application.settings.home / "uploads" / "lights.txt"
    assert created.status_code == 201 and created.json()["status"] == "new"
    assert created.json()["path"] == str(stored.resolve()) and created.json()["chunk_count"] == 1
    assert again.json()["status"] == "unchanged"
    assert sorted(Path(doc["path"]).name for doc in listed) == ["glaciers.txt", "lights.txt", "orchard.md"]
    assert fetched.json()["title"] and fetched.json()["object"] == "document"
    assert reindexed["summary"]["unchanged"] == 3 and len(reindexed["files"]) == 3
    assert hits[0]["url"] == stored.resolve().as_uri()
    assert deleted.json() == {"id": document_id, "object": "document.deleted", "deleted": True}
    assert not stored.exists()
    assert gone.status_code == 404 and unknown.status_code == 404
    assert not_a_number.status_code == 422 and huge.status_code == 422


def test_uploads_refuse_traversal_unsupported_types_and_oversize(tmp_path: Path) -> None:
    server, application = build(tmp_path, max_upload_bytes=2048)
    home = application.settings.home
    with TestClient(server) as client:
        names = ["../escape.txt", "..\\escape.txt", "/etc/escape.txt", ".hidden.txt", "a/../../escape.txt"]
        traversal = [
            client.post("/v1/documents", files={"file": (name, b"escape", "text/plain")}) for name in names
        ]
        binary = client.post("/v1/documents", files={"file": ("tool.exe", b"MZ", "application/octet-stream")})
        big = client.post("/v1/documents", files={"file": ("big.txt", b"word " * 1000, "text/plain")})
        huge = client.post("/v1/documents", files={"file": ("huge.txt", b"word " * 20_000, "text/plain")})
        broken = client.post("/v1/documents", files={"file": ("broken.pdf", b"not a pdf", "application/pdf")})
    assert [r.status_code for r in traversal] == [400] * len(names)
    assert all(r.json()["error"]["param"] == "file" for r in traversal)
    assert not list(tmp_path.rglob("escape.txt")) and not (home / "uploads" / ".hidden.txt").exists()
    assert binary.status_code == 415 and ".txt" in binary.json()["error"]["message"]
    assert big.status_code == 413 and huge.status_code == 413
    assert broken.status_code == 422
    assert sorted(path.name for path in (home / "uploads").iterdir()) == []


def test_health_readiness_and_unknown_routes(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        deadline = time.monotonic() + 20
        while (ready := client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        missing = client.get("/v2/nothing")
        wrong_method = client.get("/v1/chat/completions")
    assert ready.json()["status"] == "ready"
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    assert wrong_method.status_code == 405 and "POST" in wrong_method.headers["allow"]


def test_readiness_reports_a_model_that_failed_to_load(tmp_path: Path) -> None:
    from footnote.application import create_app
    from footnote.config import Settings
    from footnote.server import create_server

    settings = Settings(home=tmp_path / "home", llm=str(tmp_path / "missing.gguf"))
    server = create_server(settings, create_app(settings, embedder=HashingEmbedder()))
    with TestClient(server) as client:
        deadline = time.monotonic() + 20
        while (ready := client.get("/readyz")).json()["status"] == "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        chat = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
    assert ready.status_code == 503 and ready.json()["status"] == "failed"
    assert "missing.gguf" in ready.json()["detail"]
    assert chat.status_code == 503 and chat.json()["error"]["type"] == "service_unavailable"
