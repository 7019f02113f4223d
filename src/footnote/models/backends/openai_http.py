"""Generation through an OpenAI-compatible server (vLLM, llama.cpp server, Ollama, LM Studio).

`POST {base_url}/chat/completions` with `stream: true`; the reply is server-sent events
whose `choices[0].delta.content` pieces are yielded as they arrive. Closing the iterator
(the client went away) closes the connection, which these servers take as a cancel.
Every failure becomes a `BackendUnavailable` (down, HTTP 5xx, malformed reply, stalled
stream: another backend may do better) or a `BackendError` (the request itself was
refused, HTTP 4xx), each naming the URL and the fix.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from footnote.models.backends.errors import BackendError, BackendTimeout, BackendUnavailable
from footnote.models.base import GenerationParams, Generator, Message

_HINT = "is it an OpenAI-compatible server (POST /chat/completions with stream: true)?"


class OpenAIGenerator(Generator):
    thread_safe = True

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        api_key: str | None = None,
        context_length: int = 2048,
        connect_timeout: float = 5.0,
        timeout: float = 60.0,
        name: str | None = None,
        max_connections: int = 64,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.context_length = context_length
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.name = name or f"{model}@{self.base_url}"
        headers = {"Accept": "text/event-stream, application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=max_connections),
        )

    def close(self) -> None:
        self._client.close()

    def health(self, timeout: float = 2.0) -> bool:
        """Does the server answer `GET /models` with JSON?"""
        try:
            response = self._client.get(f"{self.base_url}/models", timeout=timeout)
            return response.status_code == 200 and isinstance(response.json(), dict)
        except (httpx.HTTPError, ValueError):
            return False

    def payload(self, messages: Sequence[Message], params: GenerationParams) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "seed": params.seed,
        }
        if params.stop:
            payload["stop"] = list(params.stop)
        return payload

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        url = f"{self.base_url}/chat/completions"
        timeout = self._timeout(params.deadline, url)
        try:
            with self._client.stream(
                "POST", url, json=self.payload(messages, params), timeout=timeout
            ) as response:
                _check_status(response, url)
                if response.headers.get("content-type", "").startswith("application/json"):
                    yield _whole_reply(response.read(), url)
                    return
                yield from self._events(response, url, params.deadline)
        except httpx.TimeoutException as exc:
            kind = "connecting" if isinstance(exc, httpx.ConnectTimeout) else "waiting for data"
            raise BackendTimeout(f"{url} timed out {kind} ({timeout.read:g} s); is it stalled?") from None
        except httpx.TransportError as exc:
            raise BackendUnavailable(f"cannot reach {url} ({exc}); is the server running?") from None

    def _timeout(self, deadline: float | None, url: str) -> httpx.Timeout:
        read = self.timeout
        if deadline is not None:
            read = min(read, deadline - time.monotonic())
            if read <= 0:
                raise BackendTimeout(f"the deadline passed before {url} was asked")
        return httpx.Timeout(read, connect=min(self.connect_timeout, read))

    def _events(self, response: httpx.Response, url: str, deadline: float | None) -> Iterator[str]:
        for line in response.iter_lines():
            if deadline is not None and time.monotonic() > deadline:
                raise BackendTimeout(f"the deadline passed while {url} was still answering")
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            piece = _delta(data, url)
            if piece:
                yield piece
        raise BackendUnavailable(f"{url} ended the stream without 'data: [DONE]'; {_HINT}")


def _check_status(response: httpx.Response, url: str) -> None:
    if response.status_code < 400:
        return
    detail = response.read()[:300].decode("utf-8", "replace").strip()
    message = f"{url} answered HTTP {response.status_code}: {detail or response.reason_phrase}"
    if response.status_code in (401, 403):
        raise BackendError(f"{message}; check the backend's api_key")
    if response.status_code == 404:
        raise BackendError(f"{message}; check base_url (it usually ends in /v1) and the model name")
    if response.status_code >= 500 or response.status_code in (408, 429):
        raise BackendUnavailable(message)
    raise BackendError(message)


def _delta(data: str, url: str) -> str:
    try:
        chunk = json.loads(data)
        choices = chunk.get("choices") or []
        if not choices:
            return ""  # a usage-only chunk
        piece = (choices[0].get("delta") or {}).get("content")
    except (json.JSONDecodeError, AttributeError) as exc:
        raise BackendUnavailable(f"{url} sent a malformed event ({data[:80]!r}: {exc}); {_HINT}") from None
    if piece is not None and not isinstance(piece, str):
        raise BackendUnavailable(f"{url} sent delta.content of type {type(piece).__name__}; {_HINT}")
    return piece or ""


def _whole_reply(body: bytes, url: str) -> str:
    try:
        content = json.loads(body)["choices"][0]["message"]["content"]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        raise BackendUnavailable(f"{url} sent a malformed reply ({body[:80]!r}: {exc}); {_HINT}") from None
    if not isinstance(content, str):
        raise BackendUnavailable(f"{url} sent message.content that is not text; {_HINT}")
    return content
