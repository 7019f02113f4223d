"""/v1/completions (echo scoring) and /v1/perplexity against a fake scorer (real subclasses)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from footnote.perplexity import ScoringOptions, score_string
from footnote.server.scoring import ScoringHost
from tests.unit.server_fixtures import build
from tests.unit.test_perplexity import CharTokenizer, RecordingScorer, fake_logprob


@pytest.fixture
def scorer() -> RecordingScorer:
    scorer = RecordingScorer(CharTokenizer(), context_length=32)
    scorer.tokenizer.vocab_size = 0x110000
    return scorer


@pytest.fixture
def client(tmp_path: Path, scorer: RecordingScorer) -> TestClient:
    server, _ = build(tmp_path, ingest=False)
    server.state.footnote.scoring = ScoringHost(server.state.footnote.settings, opener=lambda: scorer)
    return TestClient(server)


def test_echo_returns_prompt_logprobs_in_the_legacy_shape(client: TestClient) -> None:
    reply = client.post(
        "/v1/completions", json={"prompt": "abcé", "echo": True, "max_tokens": 0, "logprobs": 1}
    )
    assert reply.status_code == 200, reply.text
    choice = reply.json()["choices"][0]
    logprobs = choice["logprobs"]
    assert choice["text"] == "abcé" and logprobs["tokens"] == ["a", "b", "c", "é"]
    assert logprobs["token_logprobs"] == [None, *(fake_logprob(ord(c)) for c in "bcé")]
    assert logprobs["text_offset"] == [0, 1, 2, 3]
    assert logprobs["top_logprobs"][0] is None
    assert logprobs["top_logprobs"][1] == {"b": fake_logprob(ord("b"))}
    assert reply.json()["usage"] == {"prompt_tokens": 4, "completion_tokens": 0, "total_tokens": 4}


def test_token_id_prompts_are_scored_as_given(client: TestClient) -> None:
    ids = [ord(c) for c in "hello"]
    reply = client.post("/v1/completions", json={"prompt": ids, "echo": True, "max_tokens": 0, "logprobs": 0})
    assert reply.status_code == 200, reply.text
    values = reply.json()["choices"][0]["logprobs"]["token_logprobs"]
    assert values == [None, *(fake_logprob(i) for i in ids[1:])]


def test_echo_matches_in_process_perplexity(client: TestClient, scorer: RecordingScorer) -> None:
    text = "the quick brown fox"
    reply = client.post(
        "/v1/completions", json={"prompt": text, "echo": True, "max_tokens": 0, "logprobs": 1}
    )
    values = reply.json()["choices"][0]["logprobs"]["token_logprobs"][1:]
    local = score_string(scorer, text, ScoringOptions(context_length=32))
    assert math.exp(-sum(values) / len(values)) == pytest.approx(local.perplexity)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": "abc", "max_tokens": 0}, "echo"),
        ({"prompt": "abc", "echo": True, "max_tokens": 5}, "max_tokens"),
        ({"prompt": "abc", "echo": True, "max_tokens": 0, "stream": True}, "stream"),
        ({"prompt": "x" * 40, "echo": True, "max_tokens": 0}, "prompt"),
        ({"prompt": [0x110000], "echo": True, "max_tokens": 0}, "prompt"),
        ({"prompt": "abc", "echo": True, "max_tokens": 0, "model": "gpt-4"}, "model"),
    ],
)
def test_requests_it_cannot_serve_get_a_4xx_naming_the_field(
    client: TestClient, body: dict[str, object], param: str
) -> None:
    reply = client.post("/v1/completions", json=body)
    assert 400 <= reply.status_code < 500, reply.text
    assert reply.json()["error"]["param"] == param


def test_perplexity_route_agrees_with_the_library(client: TestClient, scorer: RecordingScorer) -> None:
    text = "perplexity of a short text"
    reply = client.post("/v1/perplexity", json={"text": text, "context_length": 8, "tokens": True})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    local = score_string(RecordingScorer(CharTokenizer(), 32), text, ScoringOptions(context_length=8))
    assert body["perplexity"] == pytest.approx(local.perplexity)
    assert body["tokens_scored"] == local.tokens_scored == len(body["tokens"])
    assert all(text[t["offset"] : t["offset"] + len(t["text"])] == t["text"] for t in body["tokens"])


@pytest.mark.parametrize(
    "body",
    [{"text": ""}, {"text": "a"}, {"text": "abc", "context_length": 64}, {"text": "abc", "stride": 1000}],
)
def test_perplexity_bad_input_is_a_4xx(client: TestClient, body: dict[str, object]) -> None:
    reply = client.post("/v1/perplexity", json=body)
    assert 400 <= reply.status_code < 500, reply.text
    assert reply.json()["error"]["message"]
