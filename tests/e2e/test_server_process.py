"""`footnote serve` as a real process, driven by the official `openai` client with the real models."""

from __future__ import annotations

import math
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from footnote.models.base import precision_name
from footnote.models.cpu import cpu_flags, fastest_embedding
from tests.e2e.conftest import RunningServer

QUESTION = "Who invented the Fresnel lens?"
# The server embeds as `auto` chooses on this CPU (bf16 where it has AMX, int8 elsewhere).
EMBEDDER_NAME = precision_name("minilm-l6", fastest_embedding(cpu_flags())[1])


@pytest.fixture(scope="module")
def client(served: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{served.base_url}/v1", api_key=served.api_key, max_retries=0, timeout=300)


def test_chat_streams_the_same_cited_answer_as_it_returns(client: openai.OpenAI) -> None:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": QUESTION}]
    whole = client.chat.completions.create(model="smollm2-135m", messages=messages, temperature=0, seed=0)
    text = whole.choices[0].message.content
    assert text and "Fresnel" in text
    assert whole.choices[0].finish_reason in ("stop", "length")
    assert whole.usage and whole.usage.total_tokens > 0
    extra = whole.model_extra or {}
    assert extra["citations"] and all(uri.startswith("file://") for uri in extra["citations"])
    assert any(uri.endswith("lighthouses.md") for uri in extra["citations"])
    results = extra["search_results"]
    assert [r["url"] for r in results] == extra["citations"]
    assert all(r["source"] == "attachment" and r["title"] and r["snippet"] for r in results)
    assert extra["footnote"]["citations"], f"no verified citation in {text!r}"

    stream = client.chat.completions.create(
        model="smollm2-135m",
        messages=messages,
        temperature=0,
        seed=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == text
    assert (chunks[0].model_extra or {})["citations"] == extra["citations"]
    assert (chunks[0].model_extra or {})["search_results"] == results
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage


def test_embeddings_come_from_the_real_embedder(client: openai.OpenAI) -> None:
    response = client.embeddings.create(model="minilm-l6", input=["lighthouse lens", "volcano eruption"])
    vectors = [item.embedding for item in response.data]
    assert [len(vector) for vector in vectors] == [384, 384]
    assert all(math.isclose(math.sqrt(sum(v * v for v in vector)), 1.0, abs_tol=1e-3) for vector in vectors)
    assert response.model == EMBEDDER_NAME and response.usage.prompt_tokens > 0


def test_models_list_names_the_llm_and_the_embedder(client: openai.OpenAI) -> None:
    assert sorted(model.id for model in client.models.list()) == [EMBEDDER_NAME, "smollm2-135m"]


def test_a_wrong_key_is_refused_and_probes_stay_open(served: RunningServer) -> None:
    wrong = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="not-the-key-0123456789", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    assert httpx.get(f"{served.base_url}/healthz").json() == {"status": "ok"}
    metrics = httpx.get(f"{served.base_url}/metrics", headers={"Authorization": f"Bearer {served.api_key}"})
    families = {family.name for family in text_string_to_metric_families(metrics.text)}
    expected = {"footnote_http_requests", "footnote_time_to_first_token_seconds", "footnote_index_chunks"}
    assert expected <= families
    assert served.api_key not in served.log.read_text(encoding="utf-8")


def after_the_opening_question(
    client: openai.OpenAI, follow_up: str
) -> list[openai.types.chat.ChatCompletionMessageParam]:
    """`QUESTION`, footnote's answer to it, and `follow_up`: a conversation's messages."""
    first: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": QUESTION}]
    opening = client.chat.completions.create(model="smollm2-135m", messages=first, temperature=0, seed=0)
    return [
        *first,
        {"role": "assistant", "content": opening.choices[0].message.content or ""},
        {"role": "user", "content": follow_up},
    ]


def answered_from(
    client: openai.OpenAI,
    conversation: list[openai.types.chat.ChatCompletionMessageParam],
    answer: str,
    document: str,
) -> tuple[str, dict[str, Any]]:
    """The conversation's answer, which must hold `answer` with a citation quoting it from
    `document`, and its token usage per step."""
    whole = client.chat.completions.create(model="smollm2-135m", messages=conversation, temperature=0, seed=0)
    text = whole.choices[0].message.content or ""
    assert answer in text, text
    detail = (whole.model_extra or {})["footnote"]
    assert any(answer in c["quote"] and c["path"].endswith(document) for c in detail["citations"])
    assert whole.usage is not None
    return text, (whole.usage.model_extra or {})["steps"]


def test_a_follow_up_is_answered_from_the_document_the_first_turn_named(client: openai.OpenAI) -> None:
    # Alone, "What country was he from?" could be asked of the lighthouse or the honeybee
    # document (a French physicist, an Austrian scientist); the first turn names the lens.
    conversation = after_the_opening_question(client, "What country was he from?")
    text, steps = answered_from(client, conversation, "French", "lighthouses.md")
    # SmolLM2 answers a follow-up it is asked to rewrite, so it is not asked: the follow-up is
    # searched after the first question, which names the lens.
    assert "condense" not in steps, steps

    stream = client.chat.completions.create(
        model="smollm2-135m", messages=conversation, temperature=0, seed=0, stream=True
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert streamed == text


def test_a_follow_up_that_names_its_subject_is_searched_as_written(client: openai.OpenAI) -> None:
    # The first turn is about the Fresnel lens; the follow-up names another subject of its own,
    # finds the same document with the conversation as without it, and is not rewritten.
    conversation = after_the_opening_question(client, "Which volcano buried the Roman town of Pompeii?")
    _, steps = answered_from(client, conversation, "Vesuvius", "volcanoes.pdf")
    assert "condense" not in steps, steps
