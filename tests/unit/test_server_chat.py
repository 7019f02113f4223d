"""POST /v1/chat/completions with the test-double models: OpenAI and Perplexity shapes."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from footnote.answer.prompt import NO_ANSWER, SYSTEM_PROMPT
from footnote.models.base import GenerationParams, approximate_token_count
from tests.fakes import WordJudge
from tests.unit.server_fixtures import (
    APPLE_REPLY,
    RecordingGenerator,
    ask_body,
    build,
    sse_payloads,
    streamed_text,
    write_corpus,
)


def test_completion_has_openai_and_perplexity_fields(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY])
    with TestClient(server) as client:
        response = client.post("/v1/chat/completions", json=ask_body())
    assert response.status_code == 200
    body = response.json()
    assert body["id"].startswith("chatcmpl-") and body["object"] == "chat.completion"
    assert isinstance(body["created"], int) and body["model"] == "scripted"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": APPLE_REPLY}
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["completion_tokens"] > 0 and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert body["citations"][0].startswith("file://") and body["citations"][0].endswith("orchard.md")
    first = body["search_results"][0]
    assert first["url"] == body["citations"][0] and first["source"] == "attachment"
    assert first["title"] == "Orchard Notes" and "cold winter" in first["snippet"]
    assert len(first["date"]) == 10 and first["last_updated"] == first["date"]
    assert "related_questions" not in body
    detail = body["footnote"]
    assert detail["answer"] == choice["message"]["content"]
    assert all(sentence["citations"] == [1] for sentence in detail["sentences"])
    assert detail["citations"][0]["quote"] in detail["sources"][0]["text"]


def test_streamed_text_equals_the_completion_and_ends_with_done(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY, APPLE_REPLY])
    with TestClient(server) as client:
        whole = client.post("/v1/chat/completions", json=ask_body()).json()
        body = ask_body(stream=True, stream_options={"include_usage": True})
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            payloads = sse_payloads(response.iter_lines())
    assert payloads[-1] == "[DONE]"
    chunks = payloads[:-1]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert len({chunk["id"] for chunk in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[0]["citations"] == whole["citations"]
    assert chunks[0]["search_results"] == whole["search_results"]
    assert streamed_text(chunks) == whole["choices"][0]["message"]["content"]
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) >= 2
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0]["choices"][0]["finish_reason"] == "stop"
    assert finish[0]["footnote"]["answer"] == streamed_text(chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]


SYSTEM_RULES_START = SYSTEM_PROMPT.splitlines()[0]
ORCHARD_QUESTIONS = " What do apple trees need?\n2. What carries pollen between the varieties?"
GLACIER_QUESTIONS = " How does a glacier move?\n2. Who painted the Mona Lisa?"
RELATED = ["What carries pollen between the varieties?", "How does a glacier move?"]


def test_related_questions_when_asked_are_grounded_and_not_the_question(tmp_path: Path) -> None:
    replies = [APPLE_REPLY, ORCHARD_QUESTIONS, GLACIER_QUESTIONS] * 2
    server, _ = build(tmp_path, replies)
    with TestClient(server) as client:
        body = client.post("/v1/chat/completions", json=ask_body(return_related_questions=True)).json()
        stream = ask_body(return_related_questions=True, stream=True)
        with client.stream("POST", "/v1/chat/completions", json=stream) as response:
            chunks = [c for c in sse_payloads(response.iter_lines()) if isinstance(c, dict)]
    assert body["related_questions"] == RELATED
    assert body["footnote"]["related_questions"] == RELATED
    assert body["choices"][0]["message"]["content"] == APPLE_REPLY
    assert [c.get("related_questions") for c in chunks if "related_questions" in c] == [RELATED]


def test_the_setting_suggests_related_questions_without_the_request_flag(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY, ORCHARD_QUESTIONS, GLACIER_QUESTIONS], related_questions=True)
    with TestClient(server) as client:
        body = client.post("/v1/chat/completions", json=ask_body()).json()
    assert body["related_questions"] == RELATED


def test_max_tokens_is_capped_by_the_server(tmp_path: Path) -> None:
    long_reply = " ".join(f"Apple tree {n} needs a cold winter." for n in range(20))
    server, _ = build(tmp_path, [long_reply], max_tokens_cap=16)
    with TestClient(server) as client:
        body = client.post("/v1/chat/completions", json=ask_body(max_tokens=100_000)).json()
    raw = body["footnote"]["raw_answer"]
    assert len(raw.split()) == 16  # the scripted model writes a word per token
    # Usage is counted by the model's tokenizer, over what it wrote.
    assert body["usage"]["completion_tokens"] == approximate_token_count(raw)
    assert body["usage"]["steps"]["answer"]["completion_tokens"] == approximate_token_count(raw)
    assert body["choices"][0]["finish_reason"] == "length"


def test_stop_and_sampling_parameters_reach_the_model(tmp_path: Path) -> None:
    generator = RecordingGenerator([APPLE_REPLY, APPLE_REPLY])
    server, _ = build(tmp_path, generator=generator)
    with TestClient(server) as client:
        fields: dict[str, Any] = {
            "stop": [" Bees"],
            "temperature": 0.7,
            "top_p": 0.9,
            "seed": 7,
            "max_tokens": 100,
        }
        body = client.post("/v1/chat/completions", json=ask_body(**fields)).json()
        client.post("/v1/chat/completions", json=ask_body(stop="never"))
    assert body["choices"][0]["message"]["content"] == "Apple trees need a cold winter to set fruit well [1]."
    # Each request carries its deadline (request_timeout from now) for the backend queues.
    assert all(params.deadline is not None for params in generator.params)
    sent = [replace(params, deadline=None) for params in generator.params]
    assert sent[0] == GenerationParams(100, 0.7, 0.9, (" Bees",), 7, repeat_penalty=1.1)
    # Unset fields take the server's settings.
    assert sent[1] == GenerationParams(256, 0.0, 1.0, ("never",), 0, repeat_penalty=1.1)


def test_a_follow_up_is_condensed_and_answered_with_the_conversation(tmp_path: Path) -> None:
    # The first model call condenses the follow-up (it names too little to be searched alone);
    # the second answers it.
    generator = RecordingGenerator(["What do apple trees need in winter?", APPLE_REPLY])
    server, _ = build(tmp_path, generator=generator)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Tell me about apple trees."},
        {"role": "assistant", "content": "Apple trees grow in orchards."},
        {"role": "user", "content": [{"type": "text", "text": "And in winter?"}]},
    ]
    with TestClient(server) as client:
        response = client.post("/v1/chat/completions", json={"messages": messages})
    assert response.status_code == 200
    condense, answer = generator.calls
    assert "Tell me about apple trees." in condense[-1].content
    assert condense[-1].content.endswith("Last question: And in winter?")
    system, *turns, question = answer
    # footnote's rules first, the client's system message beneath them
    assert system.role == "system" and system.content.startswith(SYSTEM_RULES_START)
    assert system.content.endswith("\nBe brief.")
    assert [(m.role, m.content) for m in turns] == [
        ("user", "Tell me about apple trees."),
        ("assistant", "Apple trees grow in orchards."),
    ]
    assert question.content.endswith("Question: What do apple trees need in winter?")
    usage = response.json()["usage"]
    assert set(usage["steps"]) == {"condense", "answer"}
    assert usage["prompt_tokens"] == sum(step["prompt_tokens"] for step in usage["steps"].values())


def test_without_earlier_turns_nothing_is_condensed(tmp_path: Path) -> None:
    generator = RecordingGenerator([APPLE_REPLY])
    server, _ = build(tmp_path, generator=generator)
    with TestClient(server) as client:
        response = client.post("/v1/chat/completions", json=ask_body())
    assert response.status_code == 200
    assert len(generator.calls) == 1
    assert generator.calls[0][0].content == SYSTEM_PROMPT


def test_domain_filter_includes_and_excludes_sources(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY, APPLE_REPLY])
    with TestClient(server) as client:
        only = client.post("/v1/chat/completions", json=ask_body(search_domain_filter=["orchard"])).json()
        without = client.post("/v1/chat/completions", json=ask_body(search_domain_filter=["-orchard"])).json()
    assert only["citations"] and all(uri.endswith("orchard.md") for uri in only["citations"])
    assert without["citations"] and not any(uri.endswith("orchard.md") for uri in without["citations"])


def test_recency_filter_drops_old_documents(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    server, application = build(tmp_path, [APPLE_REPLY], ingest=False)
    two_days_ago = time.time() - 2 * 86400
    for path in corpus.iterdir():
        os.utime(path, (two_days_ago, two_days_ago))
    application.ingest([corpus])
    with TestClient(server) as client:
        recent = client.post("/v1/chat/completions", json=ask_body(search_recency_filter="day")).json()
        search = client.post("/v1/search", json={"query": "apple", "search_recency_filter": "week"}).json()
    assert recent["citations"] == [] and recent["choices"][0]["message"]["content"] == NO_ANSWER
    assert search["results"]


def test_bad_requests_get_openai_error_objects(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        no_user = client.post("/v1/chat/completions", json={"messages": [{"role": "system", "content": "x"}]})
        blank = client.post("/v1/chat/completions", json=ask_body("   "))
        too_hot = client.post("/v1/chat/completions", json=ask_body(temperature=5))
        bad_json = client.post(
            "/v1/chat/completions", content=b'{"messages": [', headers={"content-type": "application/json"}
        )
        not_object = client.post("/v1/chat/completions", json=["x"])
        two = client.post("/v1/chat/completions", json=ask_body(n=2))
        too_long = client.post("/v1/chat/completions", json=ask_body("why " * 2000))
        surrogate = client.post(
            "/v1/chat/completions",
            content=b'{"messages": [{"role": "user", "content": "apple \\ud800 trees"}]}',
            headers={"content-type": "application/json"},
        )
    assert no_user.status_code == 400 and no_user.json()["error"]["param"] == "messages"
    assert blank.status_code == 400
    assert too_hot.status_code == 422
    assert too_hot.json()["error"] == {
        "message": too_hot.json()["error"]["message"],
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "invalid_value",
    }
    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.json()["error"]["message"]
    assert not_object.status_code == 400
    assert two.status_code == 422 and two.json()["error"]["param"] == "n"
    assert too_long.status_code == 400 and "4,000" in too_long.json()["error"]["message"]
    assert surrogate.status_code == 422 and surrogate.json()["error"]["param"] == "messages.0.content"


def test_a_bad_streamed_question_still_gets_a_status(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    with TestClient(server) as client:
        response = client.post("/v1/chat/completions", json=ask_body("why " * 2000, stream=True))
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def _follow_up(first_question: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": first_question},
            {"role": "assistant", "content": "They grow in orchards."},
            {"role": "user", "content": "What do they need?"},
        ]
    }


def test_the_answer_cache_keys_on_the_condensed_question(tmp_path: Path) -> None:
    # Calls: condense, answer; condense (same conversation: a hit, no answer); condense, answer.
    replies = [
        "What do apple trees need?",
        APPLE_REPLY,
        "What do apple trees need?",
        "What do glaciers need?",
        "A glacier is a persistent body of dense ice [1].",
    ]
    generator = RecordingGenerator(replies)
    server, _ = build(tmp_path, generator=generator, answer_cache_size=8)
    with TestClient(server) as client:
        first = client.post("/v1/chat/completions", json=_follow_up("Tell me about apple trees.")).json()
        again = client.post("/v1/chat/completions", json=_follow_up("Tell me about apple trees.")).json()
        other = client.post("/v1/chat/completions", json=_follow_up("Tell me about glaciers.")).json()
    assert len(generator.calls) == 5 and not generator.replies
    assert again["choices"][0]["message"]["content"] == first["choices"][0]["message"]["content"]
    assert "glacier" in other["choices"][0]["message"]["content"]
    assert "glacier" not in first["choices"][0]["message"]["content"]


def _reply_parts(payloads: list[Any]) -> dict[str, Any]:
    """What a streamed reply says, apart from its id and time and how its text is cut."""
    chunks = [chunk for chunk in payloads if isinstance(chunk, dict)]
    first, *_, closing, usage = chunks
    return {
        "sources": (first["citations"], first["search_results"]),
        "text": streamed_text(chunks),
        "closing": {key: closing[key] for key in ("choices", "citations", "search_results", "footnote")},
        "usage": usage["usage"],
        "done": payloads[-1],
    }


def test_a_cached_answer_is_sent_as_it_was_generated(tmp_path: Path) -> None:
    generator = RecordingGenerator([APPLE_REPLY])  # one answer: the next two come from the cache
    server, _ = build(tmp_path, generator=generator, answer_cache_size=8)
    body = ask_body(stream=True, stream_options={"include_usage": True})
    with TestClient(server) as client:
        streamed = []
        for _ in range(2):
            with client.stream("POST", "/v1/chat/completions", json=body) as response:
                streamed.append(_reply_parts(sse_payloads(response.iter_lines())))
        whole = client.post("/v1/chat/completions", json=ask_body()).json()
    generated, cached = streamed
    assert len(generator.calls) == 1
    assert cached == generated and generated["text"] == APPLE_REPLY and generated["done"] == "[DONE]"
    assert (whole["citations"], whole["search_results"]) == generated["sources"]
    assert whole["choices"][0]["message"]["content"] == generated["text"]
    assert whole["footnote"] == generated["closing"]["footnote"]
    assert whole["usage"] == generated["usage"]


UNSUPPORTED_REPLY = "Penguins huddle on the ice to keep warm [1]."
GATES = {
    # the cited spans match the question too little: the answer is withheld after generation
    "abstention": ({"abstain_below": 0.99}, APPLE_REPLY, None),
    # the sources do not match the question: nothing is generated
    "relevance floor": ({"relevance_floor": 0.99}, APPLE_REPLY, None),
    # nothing the model wrote is supported: the best source sentence is quoted instead
    "extracted quote": ({}, UNSUPPORTED_REPLY, None),
    # nothing the model wrote is supported, and no source sentence is quoted: declined
    "unsupported only": ({"quote_above": 0.99}, UNSUPPORTED_REPLY, None),
    # a sentence no source supports beside supported ones: left out
    "unsupported left out": ({}, f"{APPLE_REPLY} {UNSUPPORTED_REPLY}", None),
    # the judge decides support: it backs only the first sentence
    "judge": ({}, APPLE_REPLY, WordJudge()),
    # the evidence reader quotes its passage first, then the model's sentence
    "evidence reader": ({"reader": "evidence"}, APPLE_REPLY, None),
}


@pytest.mark.parametrize("gate", list(GATES))
def test_streamed_text_equals_the_completion_whatever_the_gate_decides(tmp_path: Path, gate: str) -> None:
    overrides, reply, judge = GATES[gate]
    server, _ = build(tmp_path, [reply] * 2, judge=judge, **overrides)
    with TestClient(server) as client:
        whole = client.post("/v1/chat/completions", json=ask_body()).json()
        with client.stream("POST", "/v1/chat/completions", json=ask_body(stream=True)) as response:
            chunks = sse_payloads(response.iter_lines())
    content = whole["choices"][0]["message"]["content"]
    assert content
    assert streamed_text(chunks) == content
    final = [c for c in chunks if isinstance(c, dict) and "footnote" in c]
    assert final[0]["footnote"]["answer"] == content
    assert "Penguins" not in streamed_text(chunks)  # nothing unsupported is ever shown
    if gate in ("abstention", "relevance floor", "unsupported only"):
        assert content == NO_ANSWER and whole["footnote"]["abstained"]
        # no withheld claim was streamed before the gate decided
        assert "Apple trees" not in streamed_text(chunks)
