"""Collections and scoped keys through the HTTP API: nothing of a collection reaches a key that
cannot read it (answers, streams, cached answers, related questions, sources, documents,
metrics), and a read-only key cannot write. Runs in both store modes (`make test-shared`)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from footnote.application import Application
from footnote.application.keys import create_key
from footnote.models.base import GenerationParams, Message
from tests.fakes import ScriptedGenerator
from tests.unit.server_fixtures import API_KEY, build, sse_payloads

# Words only the beta collection's text holds (the questions below name its subjects, never
# these): none may reach a caller who reads alpha alone.
BETA_WORDS = ("Varnholt", "cerulean", "Brakkenfjord")
BETA = {
    "minerals.md": "# Minerals\n\nZephyrite is a cerulean mineral mined at Varnholt. It glows in lamps.\n",
    "lamps.txt": "Quillmoss lamps were first lit in Brakkenfjord, burning zephyrite dust.\n",
}
ALPHA = {
    "orchard.md": "# Orchard\n\nApple trees need a cold winter to set fruit well. Bees carry pollen.\n",
    "ice.txt": "A glacier is a persistent body of dense ice that moves under its own weight.\n",
}


class QuotingGenerator(ScriptedGenerator):
    """Answers every prompt with the first sentence of its first source, cited, so an answer
    carries whatever text retrieval handed the model; related-question requests get questions
    made from the prompt's words."""

    def __init__(self) -> None:
        super().__init__([])

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        self.calls.append(list(messages))
        prompt = "\n".join(message.content for message in messages)
        words = [word for word in prompt.split() if word.isalpha()][-8:]
        reply = f"What about {' '.join(words)}?"
        for line in prompt.splitlines():
            if line.startswith("[1]"):
                reply = line[3:].strip().split(". ")[0].rstrip(".") + " [1]."
                break
        return iter([reply])


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _server(tmp_path: Path, **overrides: Any) -> tuple[FastAPI, Application, QuotingGenerator]:
    generator = QuotingGenerator()
    server, app = build(tmp_path, generator=generator, ingest=False, api_keys=[API_KEY], **overrides)
    app.ingest([_write(tmp_path / "alpha", ALPHA)], collection="alpha")
    app.ingest([_write(tmp_path / "beta", BETA)], collection="beta")
    return server, app, generator


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _leaks(text: str) -> list[str]:
    return [word for word in BETA_WORDS if word.lower() in text.lower()]


def test_a_key_for_one_collection_never_sees_a_character_of_another(tmp_path: Path) -> None:
    server, app, generator = _server(tmp_path, answer_cache_size=64, related_questions=False)
    alpha = create_key(app.catalog, "alpha-reader", ["alpha"])
    beta = create_key(app.catalog, "beta-reader", ["beta"])
    beta_ids = [record.id for record in app.documents(["beta"])]
    questions = ["What is zephyrite?", "Where were quillmoss lamps first lit?", "What do apple trees need?"]
    with TestClient(server) as client:
        admin = _bearer(API_KEY)
        # Beta's key and the admin ask first, so that every question's answer from beta sits in
        # the cache, under both ways of reading beta.
        for question, headers in itertools.product(questions, (_bearer(beta), admin)):
            body = {"messages": [{"role": "user", "content": question}]}
            cached = client.post("/v1/chat/completions", json=body, headers=headers)
            assert cached.status_code == 200
        admin_sees = client.post("/v1/search", json={"query": "zephyrite quillmoss"}, headers=admin).json()
        assert _leaks(json.dumps(admin_sees)), "the admin reads beta: the words are there to leak"
        generator.calls.clear()

        key = _bearer(alpha)
        requests = itertools.cycle(
            [("chat", {"messages": [{"role": "user", "content": q}]}) for q in questions]
            + [
                ("stream", {"messages": [{"role": "user", "content": questions[0]}], "stream": True}),
                (
                    "related",
                    {
                        "messages": [{"role": "user", "content": questions[1]}],
                        "return_related_questions": True,
                    },
                ),
                (
                    "follow-up",
                    {
                        "messages": [
                            {"role": "user", "content": "What do apple trees need?"},
                            {"role": "assistant", "content": "A cold winter [1]."},
                            {"role": "user", "content": "And zephyrite?"},
                        ]
                    },
                ),
                ("search", {"query": ["zephyrite", "quillmoss lamps"], "max_results": 10}),
                ("query", {"query": "What is zephyrite?"}),
                ("simple", {"q": "What burns zephyrite dust?"}),
                ("documents", None),
                ("collections", None),
                ("metrics", None),
            ]
        )
        statuses: dict[str, set[int]] = {}
        for kind, body in itertools.islice(requests, 240):
            response = _send(client, kind, body, key)
            statuses.setdefault(kind, set()).add(response.status_code)
            assert not _leaks(response.text), f"{kind} showed {_leaks(response.text)}: {response.text[:300]}"
        for document_id in beta_ids:
            for path in (f"/v1/documents/{document_id}", f"/v1/documents/{document_id}/text"):
                assert client.get(path, headers=key).status_code == 404
        named = client.post("/v1/search", json={"query": "zephyrite", "collections": ["beta"]}, headers=key)
        assert named.status_code == 404 and not _leaks(named.text)
    assert statuses["chat"] == {200} and statuses["stream"] == {200} and statuses["search"] == {200}
    assert statuses["documents"] == {200} and statuses["collections"] == {200}
    prompts = "\n".join(message.content for call in generator.calls for message in call)
    assert generator.calls and not _leaks(prompts), "the model was shown beta's text"


def _send(client: TestClient, kind: str, body: dict[str, Any] | None, headers: dict[str, str]) -> Any:
    if kind in ("chat", "related", "follow-up"):
        return client.post("/v1/chat/completions", json=body, headers=headers)
    if kind == "stream":
        response = client.post("/v1/chat/completions", json=body, headers=headers)
        assert sse_payloads(response.text.splitlines())[-1] == "[DONE]"
        return response
    if kind == "search":
        return client.post("/v1/search", json=body, headers=headers)
    if kind == "query":
        return client.post("/v1/query", json=body, headers=headers)
    if kind == "simple":
        return client.post("/query", json=body, headers=headers)
    if kind == "documents":
        return client.get("/v1/documents", headers=headers)
    if kind == "collections":
        return client.get("/v1/collections", headers=headers)
    return client.get("/metrics", headers=headers)


def test_collections_are_listed_as_the_key_reads_them(tmp_path: Path) -> None:
    server, app, _ = _server(tmp_path)
    alpha = create_key(app.catalog, "alpha-writer", ["alpha"], ["alpha"])
    with TestClient(server) as client:
        mine = client.get("/v1/collections", headers=_bearer(alpha)).json()["data"]
        every = client.get("/v1/collections", headers=_bearer(API_KEY)).json()["data"]
        listed = client.get("/v1/documents", headers=_bearer(alpha)).json()["data"]
        only_beta = client.get("/v1/documents?collection=beta", headers=_bearer(API_KEY)).json()["data"]
    assert [(c["name"], c["documents"], c["writable"]) for c in mine] == [("alpha", 2, True)]
    assert [c["name"] for c in every] == ["alpha", "beta"]
    assert {d["collection"] for d in listed} == {"alpha"} and len(listed) == 2
    assert {d["collection"] for d in only_beta} == {"beta"} and len(only_beta) == 2


def test_a_read_only_key_cannot_upload_or_delete(tmp_path: Path) -> None:
    server, app, _ = _server(tmp_path)
    reader = _bearer(create_key(app.catalog, "reader", ["alpha"]))
    writer = _bearer(create_key(app.catalog, "writer", [], ["alpha"]))
    alpha_id = app.documents(["alpha"])[0].id
    beta_id = app.documents(["beta"])[0].id
    upload = {"file": ("notes.txt", b"Pears ripen after picking.\n", "text/plain")}
    with TestClient(server) as client:
        refused = client.post("/v1/documents", files=upload, data={"collection": "alpha"}, headers=reader)
        not_deleted = client.delete(f"/v1/documents/{alpha_id}", headers=reader)
        not_theirs = client.delete(f"/v1/documents/{beta_id}", headers=writer)
        no_collection = client.delete("/v1/collections/alpha", headers=reader)
        uploaded = client.post("/v1/documents", files=upload, data={"collection": "alpha"}, headers=writer)
        elsewhere = client.post("/v1/documents", files=upload, data={"collection": "beta"}, headers=writer)
        deleted = client.delete(f"/v1/documents/{alpha_id}", headers=writer)
    assert refused.status_code == 403 and "--write alpha" in refused.json()["error"]["message"]
    assert not_deleted.status_code == 403
    assert not_theirs.status_code == 404  # beta does not exist for it
    assert no_collection.status_code == 403
    assert uploaded.status_code == 201 and uploaded.json()["collection"] == "alpha"
    assert elsewhere.status_code == 403
    assert deleted.status_code == 200
    assert {record.collection for record in app.documents()} == {"alpha", "beta"}
    assert len(app.documents(["beta"])) == 2  # nothing of beta was touched


def test_once_a_scoped_key_exists_every_request_needs_a_key(tmp_path: Path) -> None:
    # No admin key is configured: the server is open until the catalog holds a scoped key.
    open_server, _ = build(tmp_path / "open", generator=QuotingGenerator(), ingest=False)
    with TestClient(open_server) as client:
        assert client.get("/v1/documents").status_code == 200
    server, app = build(tmp_path / "keyed", generator=QuotingGenerator(), ingest=False)
    key = create_key(app.catalog, "someone", ["default"])
    with TestClient(server) as client:
        assert client.get("/v1/documents").status_code == 401
        assert client.get("/v1/documents", headers=_bearer(key + "x")).status_code == 401
        assert client.get("/v1/documents", headers=_bearer(key)).status_code == 200


@pytest.mark.parametrize("name", ["", "-lead", "a/b", "x" * 65, "spa ce"])
def test_a_bad_collection_name_is_refused_with_the_rule(tmp_path: Path, name: str) -> None:
    server, _, _ = _server(tmp_path)
    with TestClient(server) as client:
        response = client.post(
            "/v1/search", json={"query": "ice", "collections": [name]}, headers=_bearer(API_KEY)
        )
    assert response.status_code in (400, 422)


def test_the_mcp_tools_read_only_what_the_key_reads(tmp_path: Path) -> None:
    server, app, _ = _server(tmp_path)
    alpha = create_key(app.catalog, "alpha-agent", ["alpha"])
    headers = {**_bearer(alpha), "Accept": "application/json, text/event-stream"}

    def call(client: TestClient, tool: str, arguments: dict[str, Any]) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        response = client.post("/mcp", json=body, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()["result"]

    with TestClient(server) as client:
        listed = call(client, "list_documents", {})
        found = call(client, "search", {"query": "zephyrite quillmoss lamps"})
        asked = call(client, "ask", {"question": "What is zephyrite?"})
        hidden = call(client, "search", {"query": "zephyrite", "collections": ["beta"]})
    documents = listed["structuredContent"]["documents"]
    assert {d["collection"] for d in documents} == {"alpha"} and len(documents) == 2
    assert not _leaks(json.dumps(found)) and not _leaks(json.dumps(asked))
    assert hidden["isError"] and "no collection 'beta'" in hidden["content"][0]["text"]
