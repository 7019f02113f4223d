"""Nothing unsupported is shown as the answer, anywhere: a sentence no source supports (`flagged`)
is never streamed as a `SentenceEvent` nor part of `Answer.text`, so neither `footnote ask`, nor
the API (streamed or not), nor the MCP `ask` tool shows it. The answer keeps it in `sentences`
and its detail lists it apart, in `unsupported_sentences`. An answer whose every claim is
unsupported is declined with the no-answer sentence of the question's language."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from rich.console import Console

from footnote.answer.citations import AnswerSentence, Citation
from footnote.answer.prompt import NO_ANSWER, NO_ANSWER_ZH
from footnote.answer.result import Answer, Asked, DoneEvent, SentenceEvent
from footnote.answer.usage import TokenUsage
from footnote.application import Application
from footnote.application.answers import AnswerRequest
from footnote.cli import output
from footnote.cli.chat import stream_answer
from footnote.core.collections import EVERYTHING
from footnote.evaluation.docqa import DocQuestion, doc_metrics, score_doc_answer
from footnote.server.mcp import mcp_server
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build, sse_payloads, streamed_text

QUESTION = "What do apple trees need?"
PENGUINS = "Penguins huddle on the ice to keep warm."
MIXED_REPLY = f"{APPLE_REPLY} Penguins huddle on the ice to keep warm [1]."
UNSUPPORTED_REPLY = "Penguins huddle on the ice to keep warm [1]."
LEAD_IN_REPLY = f"The sources say:\n\n{UNSUPPORTED_REPLY}"
# No source sentence is quoted in place of an unsupported answer: the model's text is all there is.
NO_QUOTE = 0.99  # `quote_above`


def answered(application: Application) -> tuple[list[SentenceEvent], Answer]:
    events = list(application.answers.run(AnswerRequest(QUESTION)))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return [e for e in events if isinstance(e, SentenceEvent)], done.answer


def test_the_engine_never_yields_an_unsupported_sentence(tmp_path: Path) -> None:
    _, application = build(tmp_path, [MIXED_REPLY])
    streamed, answer = answered(application)

    assert streamed and not any(event.sentence.flagged for event in streamed)
    assert [answer.sentences[event.index] for event in streamed] == [e.sentence for e in streamed]
    assert answer.text == APPLE_REPLY and "Penguins" not in answer.text
    assert answer.raw_text == MIXED_REPLY
    # Kept for inspection, never shown.
    assert [s.text for s in answer.sentences if s.flagged] == [PENGUINS]
    assert [s.text for s in answer.unsupported_sentences] == [PENGUINS]
    assert not any(s.flagged for s in answer.shown_sentences)
    assert not answer.abstained and answer.abstained == (answer.withheld or not answer.citations)


def test_the_detail_lists_unsupported_sentences_apart_from_those_shown(tmp_path: Path) -> None:
    _, application = build(tmp_path, [MIXED_REPLY])
    _, answer = answered(application)

    detail = answer.detail()
    assert [s.text for s in detail.sentences] == [s.text for s in answer.shown_sentences]
    assert not any(s.flagged for s in detail.sentences)
    [unsupported] = detail.unsupported_sentences
    assert unsupported.text == PENGUINS and unsupported.flagged and unsupported.citations == []
    assert unsupported.model_markers == [1]
    assert detail.withheld_sentences == []
    data = json.loads(json.dumps(answer.to_dict()))
    assert [s["text"] for s in data["unsupported_sentences"]] == [PENGUINS]


@pytest.mark.parametrize("reply", [UNSUPPORTED_REPLY, LEAD_IN_REPLY], ids=["alone", "after a lead-in"])
def test_an_answer_whose_every_claim_is_unsupported_is_declined(tmp_path: Path, reply: str) -> None:
    _, application = build(tmp_path, [reply], quote_above=NO_QUOTE)
    streamed, answer = answered(application)

    assert "Penguins" not in answer.text and answer.text.endswith(NO_ANSWER)
    assert answer.abstained and not answer.citations and not answer.extracted
    assert not any(event.sentence.flagged for event in streamed)
    assert [s.text for s in answer.unsupported_sentences] == [PENGUINS]
    # The no-answer sentence is shown, and is not a claim.
    assert answer.shown_sentences[-1].text == NO_ANSWER and not answer.shown_sentences[-1].is_claim
    if reply == UNSUPPORTED_REPLY:
        assert answer.text == NO_ANSWER


def test_the_no_answer_sentence_is_in_the_question_s_language() -> None:
    asked = Asked("苹果树需要什么？", [], "qwen", NO_ANSWER_ZH, {}, TokenUsage())
    unsupported = AnswerSentence("企鹅挤在冰上取暖。", [], False, [1], corrected=True)

    answer = asked.answer("企鹅挤在冰上取暖。[1]", [unsupported])

    assert answer.text == NO_ANSWER_ZH and answer.abstained
    assert answer.unsupported_sentences == [unsupported]


def test_a_supported_sentence_beside_the_unsupported_one_is_the_whole_answer() -> None:
    asked = Asked("q", [], "m", NO_ANSWER, {}, TokenUsage())
    citation = Citation(1, 1, 1, "a.md", "Bees carry pollen.", 0, 18, None, 0.9)
    supported = AnswerSentence("Bees carry pollen.", [citation], True, [1], corrected=False)
    unsupported = AnswerSentence("Penguins fly south.", [], False, [1], corrected=True)

    answer = asked.answer("...", [unsupported, supported])

    assert answer.text == "Bees carry pollen [1]."
    assert answer.sentences == [unsupported, supported] and not answer.abstained


SHOWN = {
    "mixed": (MIXED_REPLY, APPLE_REPLY),
    "unsupported only": (UNSUPPORTED_REPLY, NO_ANSWER),
    # the lead-in was streamed before the claim after it was checked: the no-answer sentence follows it
    "after a lead-in": (LEAD_IN_REPLY, f"The sources say: {NO_ANSWER}"),
}


@pytest.mark.parametrize("case", list(SHOWN))
def test_the_api_and_the_terminal_show_the_same_answer_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    reply, shown = SHOWN[case]
    server, application = build(tmp_path, [reply] * 3, quote_above=NO_QUOTE)
    with TestClient(server) as client:
        whole = client.post("/v1/chat/completions", json=ask_body(QUESTION)).json()
        with client.stream("POST", "/v1/chat/completions", json=ask_body(QUESTION, stream=True)) as response:
            chunks = sse_payloads(response.iter_lines())
    terminal = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=terminal, width=1000, highlight=False))
    stream_answer(application, QUESTION, [])

    content = whole["choices"][0]["message"]["content"]
    assert content == streamed_text(chunks) == shown
    printed, _, after_sources = terminal.getvalue().partition("\nSources\n")
    assert printed == content + "\n"
    assert "Penguins" not in terminal.getvalue()
    assert "1 sentence(s) left out: no source supports them." in after_sources
    closing = next(c for c in chunks if isinstance(c, dict) and "footnote" in c)["footnote"]
    for detail in (whole["footnote"], closing):
        assert detail["answer"] == content
        assert not any(s["flagged"] for s in detail["sentences"])
        assert [s["text"] for s in detail["unsupported_sentences"]] == [PENGUINS]
        assert all(s["flagged"] for s in detail["unsupported_sentences"])
    assert whole["footnote"]["abstained"] == (reply != MIXED_REPLY)


def test_footnote_ask_json_lists_the_unsupported_sentence_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, application = build(tmp_path, [MIXED_REPLY])
    stream_answer(application, QUESTION, [], json_output=True)

    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == APPLE_REPLY
    assert "Penguins" not in " ".join(s["text"] for s in data["sentences"])
    assert [s["text"] for s in data["unsupported_sentences"]] == [PENGUINS]


@pytest.mark.parametrize("reply", [MIXED_REPLY, UNSUPPORTED_REPLY], ids=["mixed", "unsupported only"])
def test_the_mcp_ask_tool_shows_no_unsupported_sentence(tmp_path: Path, reply: str) -> None:
    server, _ = build(tmp_path, [reply], quote_above=NO_QUOTE)

    async def asked() -> Any:
        async with Client(mcp_server(server.state.footnote, EVERYTHING)) as client:
            return await client.call_tool("ask", {"question": QUESTION})

    result = asyncio.run(asked())
    assert not result.is_error
    answer = result.structured_content
    assert "Penguins" not in answer["answer"]
    if reply == MIXED_REPLY:
        assert answer["answer"] == APPLE_REPLY and answer["declined"] is False
    else:
        assert answer["answer"] == NO_ANSWER and answer["declined"] is True and answer["citations"] == []


def test_the_evaluations_count_unsupported_sentences_written_and_never_shown(tmp_path: Path) -> None:
    _, application = build(tmp_path, [MIXED_REPLY])
    _, answer = answered(application)
    item = DocQuestion("1", QUESTION, ("cold winter",), "orchard.md", None, "factoid")

    outcome = score_doc_answer(item, answer, 1.0, 0.5)

    assert (outcome.unsupported_shown, outcome.unsupported_written) == (0, 1)
    metrics = doc_metrics([outcome, outcome])
    assert (metrics["unsupported_shown"], metrics["unsupported_written"]) == (0, 2)
