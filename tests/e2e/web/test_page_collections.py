"""Collections in the page: the ask view answers from the collections picked (sent with every
question, remembered in the browser), and the library shows, filters and uploads into them.

The server is real (uvicorn on loopback, the real API and stores) with test-double models,
its documents ingested into two collections, alpha and beta.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from footnote.application import Application, create_app
from footnote.application.keys import create_key
from footnote.config import Settings
from footnote.server import create_server
from tests.e2e.web.conftest import InProcessServer, screenshot
from tests.e2e.web.test_page_behaviour import ANSWER_TIMEOUT_MS, ask
from tests.fakes import HashingEmbedder, ScriptedGenerator
from tests.store_modes import as_settings, stores_of
from tests.unit.server_fixtures import API_KEY

ALPHA = {
    "orchard.md": "# Orchard Notes\n\nApple trees need a cold winter to set fruit well. Bees carry pollen.\n",
    "glaciers.md": "# Glaciers\n\nA glacier is dense ice that moves under its own weight.\n",
}
BETA = {
    "minerals.md": "# Minerals\n\nZephyrite is a cerulean mineral mined at Varnholt. Its lamps need oil.\n",
    "lamps.md": "# Lamps\n\nQuillmoss lamps burn zephyrite dust and need a cold wick.\n",
}
ALPHA_TITLES = {"Orchard Notes", "Glaciers"}
BETA_TITLES = {"Minerals", "Lamps"}
# Words of both collections, so that asked of all of them the sources come from both.
QUESTION = "What do apple trees and zephyrite lamps need?"
REPLY = "Apple trees need a cold winter to set fruit well [1]."


def markdown_file(name: str, text: str) -> dict[str, Any]:
    """A file for Playwright's file chooser, made in memory."""
    return {"name": name, "mimeType": "text/markdown", "buffer": text.encode("utf-8")}


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def application_with_collections(root: Path, **overrides: Any) -> Application:
    """An application with test-double models and the alpha and beta documents."""
    home = root / "home"
    chosen: dict[str, Any] = {"reader": "sources", **as_settings(stores_of(home)), **overrides}
    settings = Settings(home=home, preload_models=False, **chosen)
    application = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([REPLY] * 20))
    application.ingest([write(root / "alpha", ALPHA)], collection="alpha")
    application.ingest([write(root / "beta", BETA)], collection="beta")
    return application


@pytest.fixture
def server(tmp_path: Path) -> Iterator[InProcessServer]:
    application = application_with_collections(tmp_path)
    with InProcessServer(create_server(application.settings, application)) as running:
        yield running


@pytest.fixture
def page(browser: Any, server: InProcessServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.goto(server.base_url + "/")
    yield opened
    context.close()


def asked(page: Any, question: str = QUESTION) -> tuple[dict[str, Any], set[str]]:
    """The chat request the page sends for `question`, and the titles of the answer's sources."""
    with page.expect_request("**/v1/chat/completions") as caught:
        turn = ask(page, question)
    cards = turn.locator(".source-card .card-title").all_inner_texts()
    return json.loads(caught.value.post_data), {card.split(". ", 1)[1] for card in cards}


def test_the_picked_collections_go_with_every_question_and_are_remembered(page: Any) -> None:
    picker = page.locator("#collection-picker")
    picker.wait_for()
    assert picker.locator("summary").inner_text() == "Collections: all"
    body, sources = asked(page)
    assert "collections" not in body  # all of them: the server asks every one the key reads
    assert sources & BETA_TITLES and sources & ALPHA_TITLES, sources

    picker.locator("summary").click()
    assert page.get_by_label("All collections").is_checked()
    page.get_by_label("alpha", exact=True).check()
    assert not page.get_by_label("All collections").is_checked()
    assert picker.locator("summary").inner_text() == "Collections: alpha"
    page.get_by_role("button", name="New thread").click()
    body, sources = asked(page)
    assert body["collections"] == ["alpha"]
    assert sources and sources <= ALPHA_TITLES, sources
    body, sources = asked(page, "And what carries the pollen?")  # a follow-up in the thread
    assert body["collections"] == ["alpha"] and len(body["messages"]) == 3
    assert sources <= ALPHA_TITLES, sources
    screenshot(page, "page-collections-picked")

    page.reload()
    picker.locator("summary").click()
    assert page.get_by_label("alpha", exact=True).is_checked()
    assert not page.get_by_label("beta", exact=True).is_checked()
    page.get_by_label("All collections").check()
    assert not page.get_by_label("alpha", exact=True).is_checked()
    body, _ = asked(page)
    assert "collections" not in body


def test_the_picker_hides_until_the_key_can_list_the_collections(browser: Any, tmp_path: Path) -> None:
    application = application_with_collections(tmp_path, api_keys=[API_KEY])
    with InProcessServer(create_server(application.settings, application)) as locked:
        context = browser.new_context()
        page = context.new_page()
        try:
            with page.expect_response("**/v1/collections") as listed:
                page.goto(locked.base_url + "/")
            assert listed.value.status == 401
            assert page.locator("#collection-picker").is_hidden()
            assert page.locator("#notice").is_hidden()  # quietly: no question was asked yet
            page.goto(locked.base_url + "/#/settings")
            page.get_by_label("API key").fill(API_KEY)
            page.get_by_role("button", name="Save key").click()
            page.goto(locked.base_url + "/#/ask")
            page.locator("#collection-picker").wait_for()
            page.locator("#collection-picker summary").click()
            assert page.get_by_label("beta", exact=True).is_visible()
        finally:
            context.close()


def documents_shown(page: Any) -> dict[str, str]:
    """Each document row's title and collection, as the library shows them."""
    rows = page.locator("#document-rows tr")
    titles = rows.locator(".doc-title > span").all_inner_texts()
    return dict(zip(titles, rows.locator(".doc-collection").all_inner_texts(), strict=True))


def test_the_library_shows_filters_and_uploads_into_collections(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/library")
    page.locator("#document-rows tr").nth(3).wait_for()
    assert documents_shown(page) == {
        **dict.fromkeys(ALPHA_TITLES, "alpha"),
        **dict.fromkeys(BETA_TITLES, "beta"),
    }
    filter_by = page.get_by_label("Show collection")
    filter_by.select_option("beta")
    page.locator("#document-rows tr", has_text="Orchard Notes").wait_for(state="detached")
    assert documents_shown(page) == dict.fromkeys(BETA_TITLES, "beta")
    filter_by.select_option("")
    page.locator("#document-rows tr").nth(3).wait_for()

    target = page.get_by_label("Upload into collection")
    assert target.input_value() == "default"
    offered = page.locator("#writable-collections option").evaluate_all("els => els.map(o => o.value)")
    assert sorted(offered) == ["alpha", "beta"]
    target.fill("gamma")
    upload = page.get_by_label("Upload documents", exact=False)
    upload.set_input_files([markdown_file("kites.md", "# Kites\n\nA kite flies on the wind.\n")])
    page.locator(".upload-state", has_text="indexed into gamma").wait_for(timeout=ANSWER_TIMEOUT_MS)
    page.locator("#document-rows tr", has_text="Kites").wait_for()
    assert documents_shown(page)["Kites"] == "gamma"
    page.locator("#collection-filter option[value=gamma]").wait_for(state="attached")
    filter_by.select_option("gamma")
    page.locator("#document-rows tr", has_text="Orchard Notes").wait_for(state="detached")
    assert documents_shown(page) == {"Kites": "gamma"}
    screenshot(page, "page-library-collections")

    page.get_by_role("link", name="Ask").click()
    page.locator("#collection-picker summary").click()
    assert page.get_by_label("gamma", exact=True).is_visible()  # the picker learnt of it too


def test_an_upload_the_key_may_not_write_shows_the_servers_reason(browser: Any, tmp_path: Path) -> None:
    application = application_with_collections(tmp_path, api_keys=[API_KEY])
    reader = create_key(application.catalog, "alpha-reader", ["alpha"])
    with InProcessServer(create_server(application.settings, application)) as locked:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(locked.base_url + "/#/settings")
            page.get_by_label("API key").fill(reader)
            page.get_by_role("button", name="Save key").click()
            page.goto(locked.base_url + "/#/library")
            page.locator("#document-rows tr").nth(1).wait_for()
            assert documents_shown(page) == dict.fromkeys(ALPHA_TITLES, "alpha")  # beta stays hidden
            assert page.locator("#writable-collections option").count() == 0
            page.get_by_label("Upload into collection").fill("alpha")
            upload = page.get_by_label("Upload documents", exact=False)
            upload.set_input_files([markdown_file("kites.md", "# Kites\n\nA kite flies.\n")])
            error = page.locator(".uploads .error")
            error.wait_for(timeout=ANSWER_TIMEOUT_MS)
            assert "kites.md was not added" in error.inner_text()
            assert "cannot write collection 'alpha'" in error.inner_text()
        finally:
            context.close()
