"""The whole page in Chromium against a real `footnote serve` with the bundled models.

Upload a document, ask what only it says, watch the answer stream in, hover a footnote,
open its source, then delete the document and see it gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import RunningServer
from tests.e2e.web.conftest import screenshot

DOCUMENT = """# The Harbour Clock of Port Elwen

The Harbour Clock of Port Elwen was built by the clockmaker Mira Castell in 1861.
It stands on a granite tower at the end of the north pier, where fishing boats can read
it from far out in the bay.

## How it keeps time

The clock is driven by a weight of iron that falls slowly down the hollow tower. A keeper
winds the weight back up every Sunday morning with a hand crank of forty turns.
At noon the clock rings a bronze bell twelve times, so that sailors can set their watches.
"""
TITLE = "The Harbour Clock of Port Elwen"
QUESTION = "Who built the Harbour Clock of Port Elwen?"
ANSWER_TIMEOUT_MS = 600_000  # two busy cores; the first answer also loads the LLM


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def page(browser: Any, served: RunningServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(120_000)
    opened.goto(served.base_url + "/#/settings")
    opened.get_by_label("API key").fill(served.api_key)
    opened.get_by_role("button", name="Save key").click()
    opened.locator("#settings-rows tr", has_text="Language model").wait_for()
    yield opened
    context.close()


def test_upload_ask_check_a_footnote_and_delete(page: Any, served: RunningServer, tmp_path: Path) -> None:
    document = tmp_path / "harbour-clock.md"
    document.write_text(DOCUMENT, encoding="utf-8")

    page.get_by_role("link", name="Library").click()
    page.get_by_label("Upload documents", exact=False).set_input_files(str(document))
    page.locator(".upload-state", has_text="indexed").wait_for(timeout=300_000)
    row = page.locator("#document-rows tr", has_text=TITLE)
    row.wait_for()
    screenshot(page, "real-library-uploaded")

    page.get_by_role("link", name="Ask").click()
    box = page.get_by_label("Ask a question about your documents")
    box.fill(QUESTION)
    box.press("Enter")
    turn = page.locator(".turn").last
    turn.locator(".status-line").wait_for()  # the spinner shows while the answer streams
    turn.locator(".answer-tools, .answer-error").wait_for(timeout=ANSWER_TIMEOUT_MS)
    assert turn.locator(".answer-error").count() == 0, turn.inner_text()
    assert turn.locator(".spinner").count() == 0
    assert "Mira Castell" in turn.locator(".answer").inner_text()
    screenshot(page, "real-answer")

    tooltip = page.locator("#tooltip")
    cited = None
    markers = turn.locator(".fn-marker")
    for index in range(markers.count()):
        markers.nth(index).hover()
        tooltip.wait_for(state="visible")
        if TITLE in tooltip.locator(".tip-source").inner_text():
            cited = markers.nth(index)
            break
    assert cited is not None, f"no footnote cites the uploaded document: {turn.inner_text()}"
    quote = tooltip.locator(".tip-quote").inner_text()
    assert len(quote) > 20 and flat(quote) in flat(DOCUMENT)
    screenshot(page, "real-footnote-tooltip")

    cited.click()
    page.locator("#source-view").wait_for(state="visible")
    mark = page.locator("#source-mark")
    mark.wait_for()
    assert flat(mark.inner_text()) == flat(quote)
    assert page.locator("#source-title").inner_text() == TITLE
    assert TITLE in page.locator("#source-meta").inner_text()  # the heading path of the quoted span
    screenshot(page, "real-source-view")
    page.get_by_role("button", name="Close the source view").click()

    page.get_by_role("link", name="Library").click()
    row.get_by_role("button", name=f"Delete {TITLE}").click()
    row.wait_for(state="detached")
    assert page.locator("#document-rows tr", has_text="How Lighthouses Work").count() == 1
    screenshot(page, "real-library-deleted")
    listed = httpx.get(
        f"{served.base_url}/v1/documents", headers={"Authorization": f"Bearer {served.api_key}"}
    ).json()["data"]
    assert TITLE not in {doc["title"] for doc in listed}


def test_a_follow_up_in_a_thread_is_answered_from_the_first_turns_document(page: Any) -> None:
    page.get_by_role("link", name="Ask").click()
    page.get_by_role("button", name="New thread").click()
    box = page.get_by_label("Ask a question about your documents")
    for question in ("Who invented the Fresnel lens?", "What country was he from?"):
        box.fill(question)
        box.press("Enter")
        turn = page.locator(".turn").last
        turn.locator(".answer-tools, .answer-error").wait_for(timeout=ANSWER_TIMEOUT_MS)
        assert turn.locator(".answer-error").count() == 0, turn.inner_text()
    assert page.locator(".turn").count() == 2
    answer = turn.locator(".answer").inner_text()
    assert "French" in answer, answer
    assert turn.locator(".fn-marker").count() >= 1
    screenshot(page, "real-follow-up")
