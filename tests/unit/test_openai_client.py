"""The shared OpenAI-compatible client against a loopback server: what each failure says."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from footnote.models.backends import BackendError, BackendTimeout, BackendUnavailable
from footnote.models.backends.openai_client import AsyncOpenAIClient, Event, OpenAIClient
from tests.integration.backend_servers import free_port


class _Handler(BaseHTTPRequestHandler):
    """`/<status>/...` answers that status; `/events/...` and `/unfinished/...` stream."""

    seen: ClassVar[list[dict[str, str]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        type(self).seen.append(dict(self.headers))
        mode = self.path.split("/")[1]
        if mode in ("events", "unfinished"):
            lines = [": a comment", 'data: {"choices": [{"delta": {"content": "Hel"}}]}', ""]
            lines += ['data: {"choices": [{"delta": {"content": "lo"}}], "footnote": {"n": 1}}', ""]
            lines += ['data: {"choices": []}', ""] + (["data: [DONE]", ""] if mode == "events" else [])
            self._send(200, "text/event-stream", "\n".join(lines).encode())
        elif mode == "garbage":
            self._send(200, "application/json", b"<html>not json</html>")
        elif mode == "ok":
            self._send(200, "application/json", json.dumps({"data": [{"id": "m"}]}).encode())
        else:
            self._send(int(mode), "application/json", b'{"error": {"message": "nope"}}')

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_json_replies_and_the_bearer_key(server: str) -> None:
    client = OpenAIClient(f"{server}/ok/v1/", "secret-key")
    assert client.base_url == f"{server}/ok/v1"
    assert client.get_json("/models") == {"data": [{"id": "m"}]}
    assert client.post_json("/completions", {"prompt": [1]}) == {"data": [{"id": "m"}]}
    assert _Handler.seen[0]["Authorization"] == "Bearer secret-key"
    assert _Handler.seen[0]["Accept"] == "application/json"
    client.close()


@pytest.mark.parametrize(
    ("status", "kind", "fix"),
    [
        (401, BackendError, "check the key setting"),
        (403, BackendError, "check the key setting"),
        (404, BackendError, r"check base_url \(it usually ends in /v1\) and the model name"),
        (400, BackendError, "the protocol hint"),
        (429, BackendUnavailable, ""),
        (500, BackendUnavailable, ""),
    ],
)
def test_each_http_status_names_the_url_and_the_fix(
    server: str, status: int, kind: type[BackendError], fix: str
) -> None:
    client = OpenAIClient(f"{server}/{status}/v1", hint="the protocol hint", key_setting="the key setting")
    with pytest.raises(
        kind, match=rf"{server}/{status}/v1/models answered HTTP {status}: .*nope.*{fix}"
    ) as err:
        client.get_json("/models")
    assert err.value.status == status
    assert isinstance(err.value, BackendUnavailable) == (status >= 429)


def test_a_reply_that_is_not_json_is_a_malformed_reply(server: str) -> None:
    client = OpenAIClient(f"{server}/garbage/v1", hint="the protocol hint")
    with pytest.raises(
        BackendUnavailable, match=r"/garbage/v1/models sent a malformed reply .*the protocol hint"
    ):
        client.get_json("/models")


def test_unreachable_and_timeouts_say_so() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendUnavailable, match=f"cannot reach {nowhere}/models .*is the server running"):
        OpenAIClient(nowhere).get_json("/models")
    silent = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # accepts, never answers
    try:
        client = OpenAIClient(f"http://127.0.0.1:{silent.server_address[1]}/v1", timeout=0.2)
        with pytest.raises(BackendTimeout, match=r"/v1/models timed out waiting for data \(0.2 s\)"):
            client.get_json("/models")
    finally:
        silent.server_close()


def test_events_decode_up_to_done_and_a_missing_done_is_an_error(server: str) -> None:
    client = OpenAIClient(f"{server}/events/v1")
    with client.stream("/chat/completions", {"stream": True}) as response:
        events = list(client.events(response))
    assert [event.text for event in events] == ["Hel", "lo", ""]
    assert events[1].data["footnote"] == {"n": 1}
    assert _Handler.seen[0]["Accept"] == "text/event-stream, application/json"
    unfinished = OpenAIClient(f"{server}/unfinished/v1")
    with (
        pytest.raises(BackendUnavailable, match=r"/unfinished/v1/chat/completions ended the stream without"),
        unfinished.stream("/chat/completions", {}) as response,
    ):
        list(unfinished.events(response))


def test_the_async_client_reads_the_same_events_and_errors(server: str) -> None:
    async def scenario() -> tuple[list[Event], BackendError]:
        async with (
            AsyncOpenAIClient(f"{server}/events/v1") as client,
            client.stream("/chat/completions", {}) as response,
        ):
            events = [event async for event in client.events(response)]
        async with AsyncOpenAIClient(f"{server}/429/v1") as busy:
            try:
                async with busy.stream("/chat/completions", {}):
                    pass
            except BackendError as exc:
                return events, exc
        raise AssertionError("HTTP 429 was not an error")

    events, refused = asyncio.run(scenario())
    assert [event.text for event in events] == ["Hel", "lo", ""]
    assert isinstance(refused, BackendUnavailable) and refused.status == 429
