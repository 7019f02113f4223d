"""One Markdown renderer: the terminal (`footnote ask`, `footnote chat`) and the HTTP stream show
the same text for the same answer, and it is the answer's own text."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from footnote.cli import output
from footnote.cli.chat import stream_answer
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build, sse_payloads, streamed_text
from tests.unit.test_server_chat import GATES

QUESTION = "What do apple trees need?"
# How the answers end: written and checked, or stopped by a gate (see `GATES`).
ENDINGS = {"written": ({}, APPLE_REPLY, None), **GATES}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_terminal_and_the_http_stream_show_the_same_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    overrides, reply, judge = ENDINGS[ending]
    server, application = build(tmp_path, [reply] * 3, judge=judge, **overrides)
    with TestClient(server) as client:
        whole = client.post("/v1/chat/completions", json=ask_body(QUESTION)).json()
        with client.stream("POST", "/v1/chat/completions", json=ask_body(QUESTION, stream=True)) as response:
            streamed = streamed_text(sse_payloads(response.iter_lines()))
    terminal = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=terminal, width=1000, highlight=False))
    returned = stream_answer(application, QUESTION, [])
    printed, _, _ = terminal.getvalue().partition("\nSources\n")
    content = whole["choices"][0]["message"]["content"]
    assert content
    assert printed == streamed + "\n"
    assert streamed == content == returned


def test_the_terminal_shows_no_quote_of_an_answer_it_withheld(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overrides, reply, judge = GATES["abstention"]
    _, application = build(tmp_path, [reply] * 2, judge=judge, **overrides)
    terminal = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=terminal, width=1000, highlight=False))

    stream_answer(application, QUESTION, [])
    answer = application.ask(QUESTION)

    assert answer.withheld and answer.citations  # checked, then held back
    printed = terminal.getvalue()
    assert "\nSources\n" in printed
    assert not any(c.quote in printed for c in answer.citations)
