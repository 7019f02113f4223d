"""The web page's routes, the document text it highlights spans in, and the settings it shows."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path

from fastapi.testclient import TestClient

from footnote.server.routes.web import ASSETS, WEB_PATHS
from tests.unit.server_fixtures import API_KEY, APPLE_REPLY, ORCHARD, ask_body, build

AUTH = {"Authorization": f"Bearer {API_KEY}"}


class _Loads(HTMLParser):
    """Every URL the page itself loads (scripts, styles, images)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script" and named.get("src"):
            self.urls.append(str(named["src"]))
        if tag == "link" and named.get("href"):
            self.urls.append(str(named["href"]))
        if tag == "img" and named.get("src"):
            self.urls.append(str(named["src"]))


def test_the_page_and_its_assets_load_without_a_key_and_only_from_this_server(tmp_path: Path) -> None:
    server, _ = build(tmp_path, api_keys=[API_KEY])
    with TestClient(server) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        parser = _Loads()
        parser.feed(page.text)
        assert sorted(parser.urls) == sorted(f"/ui/{name}" for name in ASSETS)
        for url in parser.urls:
            asset = client.get(url)
            assert asset.status_code == 200, url
            assert asset.headers["content-type"].startswith(ASSETS[url.removeprefix("/ui/")])
            # Offline: no CDN, web font or remote image anywhere in what the page runs.
            assert not re.search(r"https?://", asset.text), url
        assert client.get("/v1/documents").status_code == 401  # the API itself still needs the key


def test_unknown_assets_are_404_and_the_api_key_guard_opens_only_the_page(tmp_path: Path) -> None:
    server, _ = build(tmp_path, api_keys=[API_KEY])
    with TestClient(server) as client:
        missing = client.get("/ui/missing.js")
    assert missing.status_code == 401  # not one of the page's files, so not open
    assert {"/", "/ui/i18n.js", "/ui/app.js", "/ui/answer.js", "/ui/library.js", "/ui/app.css"} == WEB_PATHS
    server, _ = build(tmp_path / "open")
    with TestClient(server) as client:
        missing = client.get("/ui/missing.js")
    assert missing.status_code == 404 and "app.js" in missing.json()["error"]["message"]


def test_the_assets_ship_inside_the_package() -> None:
    shipped = {entry.name for entry in files("footnote.server.web").iterdir()}
    assert {"index.html", *ASSETS} <= shipped
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    for suffix in ("html", "js", "css"):
        assert f'"server/web/*.{suffix}"' in pyproject


def test_web_routes_stay_out_of_the_api_description(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(path.startswith("/ui") for path in paths)
    assert "/v1/documents/{document_id}/text" in paths and "/v1/settings" in paths


def test_citation_offsets_index_into_the_document_text(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY])
    with TestClient(server) as client:
        answer = client.post("/v1/chat/completions", json=ask_body()).json()
        citations = answer["footnote"]["citations"]
        assert citations
        for citation in citations:
            body = client.get(f"/v1/documents/{citation['document_id']}/text").json()
            assert body["object"] == "document.text" and body["title"] == "Orchard Notes"
            assert body["text"][citation["start"] : citation["end"]] == citation["quote"]
            assert citation["quote"] in ORCHARD.replace("\n", " ") or citation["quote"] in ORCHARD


def test_text_of_a_missing_document_is_a_404_naming_the_listing(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        response = client.get("/v1/documents/999/text")
    assert response.status_code == 404
    assert "GET /v1/documents" in response.json()["error"]["message"]


def test_settings_show_models_and_limits_but_no_secret(tmp_path: Path) -> None:
    server, _ = build(tmp_path, api_keys=[API_KEY], top_k=3, max_upload_bytes=4096)
    with TestClient(server) as client:
        assert client.get("/v1/settings").status_code == 401
        response = client.get("/v1/settings", headers=AUTH)
    body = response.json()
    assert response.status_code == 200 and body["object"] == "settings"
    assert body["llm"] == "smollm2-135m" and body["top_k"] == 3 and body["max_upload_bytes"] == 4096
    assert body["auth_required"] is True
    assert API_KEY not in response.text


def test_settings_name_the_backends_once_the_models_are_loaded(tmp_path: Path) -> None:
    server, app = build(tmp_path, [APPLE_REPLY], preload_models=False)
    with TestClient(server) as client:
        before = client.get("/v1/settings").json()
        client.post("/v1/chat/completions", json=ask_body())
        after = client.get("/v1/settings").json()
    assert before["models_state"] == "idle" and before["backends"]["generator"] is None
    assert after["models_state"] == "ready"
    assert after["backends"] == {
        "generator": "ScriptedGenerator",
        "embedder": "HashingEmbedder",
        "vector_index": "ChromaServerVectorIndex" if app.settings.vector_url else "ChromaVectorIndex",
    }
