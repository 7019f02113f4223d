"""The page's own behaviour in Chromium: errors, keyboard use, accessibility basics, layout.

The server is real (uvicorn on loopback, the real API and stores); the models are the test
doubles, because these tests are about what the page does with what the API sends.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from footnote.models.base import GenerationParams, Message
from tests.corpus import write_sample_pdf
from tests.e2e.web.conftest import InProcessServer, screenshot, serve_with
from tests.fakes import ScriptedGenerator
from tests.store_modes import lasting_stores
from tests.unit.server_fixtures import APPLE_REPLY, ORCHARD, write_corpus

FLAGGED_REPLY = APPLE_REPLY + " Pears ripen fastest on the dark side of the moon."
QUESTION = "What do apple trees need?"
ANSWER_TIMEOUT_MS = 60_000
SUGGEST = "Suggest follow-up questions"


class FailingGenerator(ScriptedGenerator):
    """Writes the first sentence of its reply, then fails, as a crashed backend would."""

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        pieces = list(super().stream(messages, params))
        return self._fail_after(pieces[: len(pieces) // 2])

    @staticmethod
    def _fail_after(pieces: list[str]) -> Iterator[str]:
        yield from pieces
        raise RuntimeError("the model backend stopped answering")


class PacedGenerator(ScriptedGenerator):
    """Hands out its words one at a time with a pause, as a model on a slow machine would."""

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        return self._paced(list(super().stream(messages, params)))

    @staticmethod
    def _paced(pieces: list[str]) -> Iterator[str]:
        for piece in pieces:
            time.sleep(0.05)
            yield piece


# Records what the last turn shows after every change to the conversation.
RECORD_TURNS = """() => {
  window.seen = [];
  new MutationObserver(() => {
    const turn = document.querySelector('.turn:last-child');
    if (!turn) return;
    const text = turn.querySelector('.answer').textContent;
    window.seen.push({text, streaming: !!turn.querySelector('.spinner')});
  }).observe(document.getElementById('turns'), {childList: true, subtree: true});
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    root = tmp_path_factory.mktemp("web-page")
    lasting_stores(root / "home")
    # Related questions are off unless a test turns the page's toggle on: one reply per answer.
    generator = ScriptedGenerator([FLAGGED_REPLY] * 100)
    with serve_with(
        root / "home", generator, write_corpus(root / "corpus"), max_upload_bytes=4096
    ) as running:
        yield running


@pytest.fixture
def page(browser: Any, server: InProcessServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.base_url)
    opened = context.new_page()
    opened.goto(server.base_url + "/")
    yield opened
    context.close()


def ask(page: Any, question: str = QUESTION) -> Any:
    box = page.get_by_label("Ask a question about your documents")
    box.fill(question)
    box.press("Enter")
    turn = page.locator(".turn").last
    turn.locator(".answer-tools, .answer-error").wait_for(timeout=ANSWER_TIMEOUT_MS)
    return turn


def assert_quoted_from(shown: str, source: str) -> None:
    """`shown` is a non-empty span of `source` (whitespace aside): an empty quote quotes nothing."""
    quote = " ".join(shown.split())
    assert quote, "the page shows an empty quote"
    assert quote in " ".join(source.split()), quote


def test_an_answer_shows_checked_footnotes_and_sources_and_leaves_out_the_unsupported(page: Any) -> None:
    turn = ask(page)
    markers = turn.locator(".fn-marker")
    assert markers.count() >= 2 and markers.first.inner_text() == "1"
    assert "moon" not in turn.locator(".answer").inner_text()
    assert turn.locator(".left-out").inner_text() == "1 sentence left out: no source supports it"
    assert turn.locator(".source-card").count() >= 1
    assert "Orchard Notes" in turn.locator(".source-card").first.inner_text()
    markers.first.hover()
    tooltip = page.locator("#tooltip")
    tooltip.wait_for(state="visible")
    quote = tooltip.locator(".tip-quote").inner_text()
    assert_quoted_from(quote, "Apple trees need a cold winter to set fruit well.")
    screenshot(page, "page-answer-light")


def watched_answer(browser: Any, base_url: str, question: str = QUESTION) -> tuple[str, list[dict[str, Any]]]:
    """The answer a fresh page shows for `question`, and what its last turn showed after every
    change while it streamed in (`RECORD_TURNS`)."""
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(base_url + "/")
        page.evaluate(RECORD_TURNS)
        turn = ask(page, question)
        final = " ".join(turn.locator(".answer").inner_text().split())
        seen: list[dict[str, Any]] = page.evaluate("window.seen")
    finally:
        context.close()
    return final, seen


def test_the_answer_streams_in_before_it_is_checked_and_complete(browser: Any, tmp_path: Path) -> None:
    generator = PacedGenerator([APPLE_REPLY])
    with serve_with(tmp_path / "home", generator, write_corpus(tmp_path / "corpus")) as running:
        final, seen = watched_answer(browser, running.base_url)
    partial = [" ".join(s["text"].split()) for s in seen if s["streaming"] and s["text"]]
    assert partial, seen  # text was on the page while the spinner still turned
    assert partial[0].startswith("Apple trees need a cold winter") and len(partial[0]) < len(final)
    assert not seen[-1]["streaming"] and "Bees carry pollen" in final


def test_copy_as_markdown_puts_the_answer_and_its_sources_on_the_clipboard(page: Any) -> None:
    turn = ask(page)
    turn.get_by_role("button", name="Copy as Markdown").click()
    turn.get_by_text("Copied the answer").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("Apple trees need a cold winter to set fruit well [1].")
    assert "[1]: file://" in copied and 'orchard.md "Orchard Notes"' in copied


def test_follow_ups_send_the_thread_and_new_thread_starts_over(page: Any) -> None:
    ask(page)
    with page.expect_request("**/v1/chat/completions") as caught:
        ask(page, "And what carries the pollen?")
    messages = json.loads(caught.value.post_data)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == QUESTION and messages[2]["content"] == "And what carries the pollen?"
    assert page.locator(".turn").count() == 2
    assert page.locator("#thread-list li").count() == 1
    page.get_by_role("button", name="New thread").click()
    assert page.locator(".turn").count() == 0
    page.locator("#thread-list button").first.click()
    assert page.locator(".turn").count() == 2


def test_keyboard_only_reaches_a_footnote_opens_its_source_and_comes_back(page: Any) -> None:
    ask(page)
    page.locator("#question").focus()
    page.keyboard.press("Shift+Tab")  # from the question box back into the answer
    for _ in range(40):
        if page.evaluate("document.activeElement.classList.contains('fn-marker')"):
            break
        page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.classList.contains('fn-marker')")
    assert page.locator("#tooltip").is_visible()
    page.keyboard.press("Enter")
    source = page.locator("#source-view")
    source.wait_for(state="visible")
    mark = page.locator("#source-mark")
    mark.wait_for()
    assert_quoted_from(mark.inner_text(), ORCHARD)
    page.keyboard.press("Escape")
    assert not source.is_visible()
    assert page.evaluate("document.activeElement.classList.contains('fn-marker')")


def test_every_control_has_a_label_and_tab_follows_the_page_order(page: Any) -> None:
    ask(page)
    unlabelled_script = """() => {
      const named = (el) => (el.labels && el.labels.length) || el.getAttribute('aria-label')
        || el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent.trim());
      return [...document.querySelectorAll('input, textarea, select, button')]
        .filter((el) => !named(el)).map((el) => el.outerHTML);
    }"""
    for view in ("#/ask", "#/library", "#/settings"):
        page.goto(page.url.split("#")[0] + view)
        assert page.evaluate(unlabelled_script) == [], view
    page.goto(page.url.split("#")[0] + "#/ask")
    page.reload()  # Tab starts again from the top of the page
    order = []
    for _ in range(7):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.textContent.trim()"))
    assert order[:6] == ["Skip to the question box", "footnote", "Ask", "Library", "Settings", "new-thread"]
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")  # back on the skip link
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "question"


CONTRAST_SCRIPT = """(selector) => {
  const rgb = (value) => value.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const luminance = (value) => {
    const [r, g, b] = rgb(value).map((c) => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const style = getComputedStyle(document.querySelector(selector));
  const [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_footnote_markers_have_readable_contrast(page: Any, scheme: str) -> None:
    page.emulate_media(color_scheme=scheme)
    ask(page)
    ratio = page.evaluate(CONTRAST_SCRIPT, ".fn-marker")
    assert ratio >= 4.5, f".fn-marker contrast {ratio:.2f} in {scheme} mode (WCAG AA asks 4.5)"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(255, 255, 255)") == (scheme == "light")
    screenshot(page, f"page-answer-{scheme}")


def test_a_phone_width_screen_has_no_sideways_scrolling(browser: Any, server: InProcessServer) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(server.base_url + "/")
        turn = ask(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        turn.locator(".fn-marker").first.tap()
        page.locator("#source-mark").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        screenshot(page, "page-phone-source")
        page.goto(server.base_url + "/#/library")
        page.locator("#document-rows tr").first.wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        screenshot(page, "page-phone-library")
    finally:
        context.close()


def test_unsupported_and_oversized_uploads_say_why_in_the_page(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/library")
    page.locator("#document-rows tr").first.wait_for()
    page.get_by_label("Upload documents", exact=False).set_input_files(
        [
            {"name": "tool.exe", "mimeType": "application/octet-stream", "buffer": b"MZ\x90\x00binary"},
            {"name": "huge.md", "mimeType": "text/markdown", "buffer": b"# Huge\n\n" + b"word " * 2000},
        ]
    )
    errors = page.locator(".uploads .error")
    errors.nth(1).wait_for(timeout=30_000)
    texts = errors.all_inner_texts()
    unsupported = next(text for text in texts if "tool.exe" in text)
    assert "was not added" in unsupported and ".md" in unsupported  # the server names what it accepts
    oversized = next(text for text in texts if "huge.md" in text)
    assert "4.0 KB" in oversized and "max_upload_bytes" in oversized
    assert all(page.locator(".uploads .error").evaluate_all("els => els.map(e => e.getAttribute('role'))"))
    screenshot(page, "page-upload-errors")


def test_a_drop_uploads_and_a_delete_removes(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/library")
    rows = page.locator("#document-rows tr")
    rows.first.wait_for()
    before = rows.count()
    page.evaluate(
        """() => {
          const data = new DataTransfer();
          const text = '# Kites\\n\\nA kite flies on the wind.\\n';
          data.items.add(new File([text], 'kites.md', {type: 'text/markdown'}));
          const drop = new DragEvent('drop', {dataTransfer: data, bubbles: true});
          document.getElementById('drop-zone').dispatchEvent(drop);
        }"""
    )
    page.locator(".upload-state", has_text="indexed").first.wait_for(timeout=30_000)
    kites = page.locator("#document-rows tr", has_text="Kites")
    kites.wait_for()
    assert rows.count() == before + 1
    kites.get_by_role("button", name="Delete Kites").click()
    kites.wait_for(state="detached")
    assert rows.count() == before


def test_a_server_error_while_streaming_shows_an_error_not_a_spinner(browser: Any, tmp_path: Path) -> None:
    generator = FailingGenerator([APPLE_REPLY])
    with serve_with(tmp_path / "home", generator, write_corpus(tmp_path / "corpus")) as failing:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(failing.base_url + "/")
            turn = ask(page)
            alert = turn.locator(".answer-error")
            assert alert.get_attribute("role") == "alert"
            assert "internal server error" in alert.inner_text()
            assert page.locator(".spinner").count() == 0
            assert page.get_by_role("button", name="Ask", exact=True).is_enabled()
            assert turn.get_by_role("button", name="Ask again").is_visible()
            screenshot(page, "page-stream-error")
        finally:
            context.close()


def test_a_missing_key_points_to_settings_and_a_saved_key_works(browser: Any, tmp_path: Path) -> None:
    key = "web-test-key-0123456789abcdef"
    generator = ScriptedGenerator([APPLE_REPLY] * 4)
    with serve_with(
        tmp_path / "home", generator, write_corpus(tmp_path / "corpus"), api_keys=[key]
    ) as locked:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(locked.base_url + "/#/library")
            notice = page.locator("#notice")
            notice.wait_for()
            assert "API key" in notice.inner_text()
            notice.get_by_role("link", name="Open Settings").click()
            page.get_by_label("API key").fill(key)
            page.get_by_role("button", name="Save key").click()
            page.locator("#settings-rows tr", has_text="Language model").wait_for()
            assert "smollm2-135m" in page.locator("#settings-rows").inner_text()
            assert key not in page.locator("#settings-rows").inner_text()
            page.goto(locked.base_url + "/#/library")
            page.locator("#document-rows tr", has_text="Orchard Notes").wait_for()
        finally:
            context.close()


def test_a_pdf_footnote_names_its_page_in_tooltip_and_source_view(browser: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lava = ["Basalt lava flows far before it cools, because it is runny and hot."]
    pumice = ["Pumice is a volcanic rock so light that it floats on water."]
    write_sample_pdf(corpus / "rocks.pdf", [lava, pumice], title="Rocks", sections=["Lava", "Pumice"])
    answer = "Pumice is a volcanic rock so light that it floats on water [1]."
    generator = ScriptedGenerator([answer] + ["Why does pumice float on water?"] * 3)
    with serve_with(tmp_path / "home", generator, corpus) as running:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(running.base_url + "/")
            page.get_by_label(SUGGEST).check()
            with page.expect_request("**/v1/chat/completions") as caught:
                turn = ask(page, "What is pumice?")
            assert json.loads(caught.value.post_data)["return_related_questions"] is True
            related = turn.locator(".related li")
            related.first.wait_for()
            assert related.all_inner_texts() == ["Why does pumice float on water?"]
            marker = turn.locator(".fn-marker").first
            marker.hover()
            tooltip = page.locator("#tooltip")
            tooltip.wait_for(state="visible")
            assert "page 2" in tooltip.locator(".tip-source").inner_text()
            marker.click()
            page.locator("#source-mark").wait_for()
            assert "floats on water" in page.locator("#source-mark").inner_text()
            meta = page.locator("#source-meta").inner_text()
            assert "Page\n2" in meta or "Page 2" in meta, meta
            screenshot(page, "page-pdf-source")
        finally:
            context.close()


def test_follow_up_suggestions_are_off_by_default_and_the_choice_survives_a_reload(
    browser: Any, tmp_path: Path
) -> None:
    # Replies for suggestions are queued too, so a page that still asked for them would get some.
    generator = ScriptedGenerator([APPLE_REPLY] + ["Why do apple trees need a cold winter?"] * 3)
    with serve_with(tmp_path / "home", generator, write_corpus(tmp_path / "corpus")) as running:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(running.base_url + "/")
            toggle = page.get_by_label(SUGGEST)
            assert not toggle.is_checked()
            with page.expect_request("**/v1/chat/completions") as caught:
                turn = ask(page)
            assert json.loads(caught.value.post_data)["return_related_questions"] is False
            assert turn.locator(".fn-marker").count() >= 1
            assert turn.locator(".related").count() == 0
            assert len(generator.calls) == 1  # the answer only: no generation for suggestions
            toggle.focus()
            page.keyboard.press("Space")
            assert toggle.is_checked()
            page.reload()
            assert page.get_by_label(SUGGEST).is_checked()
            page.get_by_label(SUGGEST).focus()
            page.keyboard.press("Space")
            page.reload()
            assert not page.get_by_label(SUGGEST).is_checked()
        finally:
            context.close()


def test_suggestions_a_server_sends_unasked_stay_hidden_while_the_toggle_is_off(
    browser: Any, tmp_path: Path
) -> None:
    question = "Why do apple trees need a cold winter?"
    generator = ScriptedGenerator([APPLE_REPLY] + [question] * 3)
    corpus = write_corpus(tmp_path / "corpus")
    with serve_with(tmp_path / "home", generator, corpus, related_questions=True) as running:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(running.base_url + "/")
            with page.expect_response("**/v1/chat/completions") as caught:
                turn = ask(page)
            assert question in caught.value.text()  # the server suggested it all the same
            assert turn.locator(".fn-marker").count() >= 1
            assert turn.locator(".related").count() == 0
        finally:
            context.close()
