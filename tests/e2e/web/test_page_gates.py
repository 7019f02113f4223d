"""The page shows what footnote decided, whatever the gate: the same text as the API's answer,
and never, even while streaming, a claim the answer then withholds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from footnote.answer.prompt import NO_ANSWER
from tests.e2e.web.conftest import serve_with
from tests.e2e.web.test_page_behaviour import QUESTION, PacedGenerator, watched_answer
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, write_corpus

GATES = {
    "abstention": {"abstain_below": 0.99},
    "relevance floor": {"relevance_floor": 0.99},
    "evidence reader": {"reader": "evidence"},
}


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("gate", list(GATES))
def test_the_page_shows_the_answer_the_api_returns(browser: Any, tmp_path: Path, gate: str) -> None:
    generator = PacedGenerator([APPLE_REPLY] * 2)
    with serve_with(
        tmp_path / "home", generator, write_corpus(tmp_path / "corpus"), **GATES[gate]
    ) as running:
        content = httpx.post(f"{running.base_url}/v1/chat/completions", json=ask_body(QUESTION), timeout=60)
        final, seen = watched_answer(browser, running.base_url)
    shown = flat(final)
    text = content.json()["choices"][0]["message"]["content"]
    assert shown, "the page shows no answer"
    # The page draws footnote markers as numbers: compare the words around them.
    assert _words(shown) == _words(text)
    if gate in ("abstention", "relevance floor"):
        assert text == NO_ANSWER
        assert not any("Apple trees" in s["text"] for s in seen), seen


def _words(text: str) -> list[str]:
    return [word for word in "".join(c if c.isalpha() or c.isspace() else " " for c in text).split()]


def test_the_page_never_shows_a_claim_no_source_supports(browser: Any, tmp_path: Path) -> None:
    # Nothing supports the model's only sentence, and no source sentence is quoted in its place.
    generator = PacedGenerator(["Penguins huddle on the ice to keep warm [1]."] * 2)
    with serve_with(
        tmp_path / "home", generator, write_corpus(tmp_path / "corpus"), quote_above=0.99
    ) as running:
        content = httpx.post(f"{running.base_url}/v1/chat/completions", json=ask_body(QUESTION), timeout=60)
        final, seen = watched_answer(browser, running.base_url)
    assert content.json()["choices"][0]["message"]["content"] == NO_ANSWER
    assert _words(flat(final)) == _words(NO_ANSWER)
    assert not any("Penguins" in s["text"] for s in seen), seen
