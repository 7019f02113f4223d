"""The remote backend against a tiny vLLM-shaped server on 127.0.0.1 (stdlib http.server)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from footnote.perplexity import RemoteScorerError, ScoringOptionError, ScoringOptions, score_string
from footnote.perplexity.backends.remote import RemoteScorer
from tests.unit.test_perplexity import CharTokenizer, RecordingScorer, digits, fake_logprob


class _VllmLikeHandler(BaseHTTPRequestHandler):
    """Answers /v1/models and /v1/completions (echo, prompt logprobs) the way vLLM does."""

    requests: ClassVar[list[dict[str, Any]]] = []
    mode = "ok"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "tiny", "max_model_len": 32}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(payload)
        if self.mode == "refuse":
            self._send(400, {"error": {"message": "echo is not supported"}})
            return
        prompt: list[int] = payload["prompt"]
        logprobs = None if self.mode == "no-logprobs" else _logprobs(prompt)
        choice = {
            "index": 0,
            "text": "".join(map(chr, prompt)),
            "logprobs": logprobs,
            "finish_reason": "length",
        }
        self._send(200, {"id": "cmpl-1", "object": "text_completion", "model": "tiny", "choices": [choice]})


def _logprobs(prompt: list[int]) -> dict[str, Any]:
    values = [None] + [fake_logprob(t) for t in prompt[1:]]
    return {
        "tokens": [chr(t) for t in prompt],
        "token_logprobs": values,
        "top_logprobs": [None] + [{chr(t): v} for t, v in zip(prompt[1:], values[1:], strict=True)],
        "text_offset": list(range(len(prompt))),
    }


@pytest.fixture
def server() -> Iterator[str]:
    _VllmLikeHandler.requests = []
    _VllmLikeHandler.mode = "ok"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _VllmLikeHandler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_remote_scores_equal_in_process_scores(server: str) -> None:
    remote = RemoteScorer(server, CharTokenizer())
    assert (remote.model, remote.context_length) == ("tiny", 32)
    options = ScoringOptions(context_length=16, stride=8)
    text = digits(60)
    remote_result = score_string(remote, text, options)
    local_result = score_string(RecordingScorer(), text, options)
    assert remote_result.tokens_scored == local_result.tokens_scored == 59
    assert remote_result.perplexity == pytest.approx(local_result.perplexity, rel=1e-12)
    first = _VllmLikeHandler.requests[0]
    assert first == {
        "model": "tiny",
        "prompt": [48 + i for i in range(16)],
        "echo": True,
        "logprobs": 1,
        "max_tokens": 0,
        "temperature": 0.0,
    }


def test_context_length_above_the_servers_is_refused_before_any_request(server: str) -> None:
    remote = RemoteScorer(server, CharTokenizer(), model="tiny")
    with pytest.raises(ScoringOptionError, match="above the 32 tokens"):
        score_string(remote, digits(100), ScoringOptions(context_length=64))
    assert _VllmLikeHandler.requests == []


def test_a_server_without_prompt_logprobs_is_a_clear_error(server: str) -> None:
    remote = RemoteScorer(server, CharTokenizer(), model="tiny", context_length=32)
    _VllmLikeHandler.mode = "refuse"
    with pytest.raises(RemoteScorerError, match=r"HTTP 400: .*echo is not supported.*token-id prompts"):
        score_string(remote, digits(10))
    _VllmLikeHandler.mode = "no-logprobs"
    with pytest.raises(RemoteScorerError, match=re.escape("returned no choices[0].logprobs.token_logprobs")):
        score_string(remote, digits(10))


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(RemoteScorerError, match=re.escape("cannot reach http://127.0.0.1:9/v1/models")):
        RemoteScorer("http://127.0.0.1:9/v1", CharTokenizer(), timeout=5)
