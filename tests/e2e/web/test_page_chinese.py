"""The page in a browser that asks for Chinese: its own words are simplified Chinese, while what
the user asked and the documents say stay as they are."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.web.conftest import InProcessServer, screenshot, serve_with
from tests.e2e.web.test_page_behaviour import ANSWER_TIMEOUT_MS
from tests.fakes import ScriptedGenerator
from tests.store_modes import lasting_stores
from tests.unit.server_fixtures import APPLE_REPLY, write_corpus

QUESTION = "What do apple trees need?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    root = tmp_path_factory.mktemp("web-page-zh")
    lasting_stores(root / "home")
    with serve_with(
        root / "home", ScriptedGenerator([APPLE_REPLY] * 10), write_corpus(root / "corpus")
    ) as served:
        yield served


def _page(browser: Any, server: InProcessServer, locale: str) -> Any:
    context = browser.new_context(locale=locale, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(server.base_url + "/")
    return context, page


def test_a_chinese_browser_gets_the_page_in_chinese(browser: Any, server: InProcessServer) -> None:
    context, page = _page(browser, server, "zh-CN")
    try:
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
        assert page.locator("#ask-button").inner_text() == "提问"
        assert page.locator("#question-label").inner_text() == "就你的文档提一个问题"
        assert page.locator("#question").get_attribute("placeholder") == "例如：菲涅耳透镜是谁发明的？"
        assert page.get_by_role("link", name="文档库").count() == 1
        box = page.locator("#question")
        box.fill(QUESTION)
        box.press("Enter")
        turn = page.locator(".turn").last
        turn.locator(".answer-tools").wait_for(timeout=ANSWER_TIMEOUT_MS)
        # Added by the page after loading: translated as it appears.
        assert turn.get_by_role("button", name="复制为 Markdown").count() == 1
        # The user's words and the documents' are not the page's to translate.
        assert turn.locator(".question").inner_text() == QUESTION
        assert "Apple trees need a cold winter" in turn.locator(".answer").inner_text()
        page.locator("a[data-view-link='library']").click()
        page.locator("#document-rows tr").first.wait_for()
        assert page.locator("#documents caption").inner_text() == "文档"
        assert "Orchard Notes" in page.locator("#document-rows").inner_text()
        screenshot(page, "page-zh-CN")
    finally:
        context.close()


def test_an_english_browser_keeps_the_page_in_english(browser: Any, server: InProcessServer) -> None:
    context, page = _page(browser, server, "en-GB")
    try:
        assert page.evaluate("document.documentElement.lang") == "en"
        assert page.locator("#ask-button").inner_text() == "Ask"
    finally:
        context.close()
