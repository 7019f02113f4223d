"""The one client of OpenAI-compatible servers: generation, remote scoring and the load generator.

vLLM, llama.cpp server, Ollama, LM Studio and footnote itself speak the same HTTP API, so
one module holds what talking to them takes: the base URL and the bearer key, timeouts,
connection limits, server-sent-event decoding (`data: {...}` lines up to `data: [DONE]`)
and a single translation of what can go wrong into the backend errors, each message
naming the URL and the fix:

- the server cannot be reached, or the connection breaks: `BackendUnavailable`;
- connecting or reading takes longer than the timeout: `BackendTimeout`;
- HTTP 5xx, 408 or 429 (another server may do better): `BackendUnavailable`;
- any other HTTP 4xx (the request itself was refused): `BackendError`;
- a reply or an event that is not the JSON the protocol promises: `BackendUnavailable`.

The HTTP status, when the server answered one, is kept as the error's `status`, and a
`Retry-After` in seconds as its `retry_after`.
`OpenAIClient` blocks (generation and scoring run in worker threads); `AsyncOpenAIClient`
serves the load generator, which keeps hundreds of requests open on one event loop.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from footnote.models.backends.errors import BackendError, BackendTimeout, BackendUnavailable

JSON = "application/json"
EVENTS = "text/event-stream, application/json"
CHAT_HINT = "is it an OpenAI-compatible server (POST /chat/completions with stream: true)?"


@dataclass(frozen=True)
class Event:
    """One decoded server-sent event: its JSON object and the text of `choices[0].delta.content`."""

    data: dict[str, Any]
    text: str


class _Endpoint:
    """What both clients share: where the server is, how to sign in, and how failures read."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        limits: httpx.Limits | None = None,
        hint: str = CHAT_HINT,
        key_setting: str = "the backend's api_key",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self.limits = limits or httpx.Limits()
        self.hint = hint  # what the server must support, said after a reply it could not give
        self.key_setting = key_setting  # where the bearer key is set, said after HTTP 401 and 403
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._connect()

    def _connect(self) -> None:
        """Opens the connection pool (an httpx client of the subclass's kind)."""
        raise NotImplementedError

    def url(self, path: str) -> str:
        return self.base_url + path

    def refusal(self, response: httpx.Response, body: bytes, url: str) -> BackendError:
        """The error for an HTTP status of 400 or more, with the server's own words."""
        status = response.status_code
        detail = body[:300].decode("utf-8", "replace").strip() or response.reason_phrase
        message = f"{url} answered HTTP {status}: {detail}"
        if status in (401, 403):
            return BackendError(f"{message}; check {self.key_setting}", status)
        if status == 404:
            return BackendError(
                f"{message}; check base_url (it usually ends in /v1) and the model name", status
            )
        if status >= 500 or status in (408, 429):
            return BackendUnavailable(message, status, _seconds(response.headers.get("Retry-After")))
        return BackendError(f"{message}; {self.hint}", status)

    def failure(self, exc: httpx.HTTPError, url: str, timeout: httpx.Timeout) -> BackendError:
        """The error for a request that got no answer: unreachable, broken off or too slow."""
        if isinstance(exc, httpx.ConnectTimeout):
            return BackendTimeout(f"{url} timed out connecting ({timeout.connect:g} s); is it stalled?")
        if isinstance(exc, httpx.TimeoutException):
            return BackendTimeout(f"{url} timed out waiting for data ({timeout.read:g} s); is it stalled?")
        return BackendUnavailable(f"cannot reach {url} ({exc}); is the server running?")

    def decode(self, body: bytes, url: str) -> Any:
        """A whole JSON reply."""
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BackendUnavailable(
                f"{url} sent a malformed reply ({body[:80]!r}: {exc}); {self.hint}"
            ) from None

    def decoder(self, response: httpx.Response) -> _EventDecoder:
        return _EventDecoder(str(response.request.url), self.hint)


def _seconds(header: str | None) -> float | None:
    """A Retry-After header's seconds; None when absent or given as a date."""
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None


class _EventDecoder:
    """Server-sent event lines to `Event`s, until `data: [DONE]`."""

    def __init__(self, url: str, hint: str) -> None:
        self.url = url
        self.hint = hint
        self.done = False

    def feed(self, line: str) -> Event | None:
        """The event a line carries; None for other lines (comments, `event:`, blanks, [DONE])."""
        if self.done or not line.startswith("data:"):
            return None
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return None
        try:
            chunk = json.loads(data)
            choices = chunk.get("choices") or []
            text = (choices[0].get("delta") or {}).get("content") if choices else None
        except (json.JSONDecodeError, AttributeError, KeyError, TypeError) as exc:
            raise BackendUnavailable(
                f"{self.url} sent a malformed event ({data[:80]!r}: {exc}); {self.hint}"
            ) from None
        if text is not None and not isinstance(text, str):
            raise BackendUnavailable(
                f"{self.url} sent delta.content of type {type(text).__name__}; {self.hint}"
            )
        return Event(chunk, text or "")

    def unfinished(self) -> BackendUnavailable:
        return BackendUnavailable(f"{self.url} ended the stream without 'data: [DONE]'; {self.hint}")


class OpenAIClient(_Endpoint):
    """A blocking, pooled client of one server; safe to share between threads."""

    def _connect(self) -> None:
        self._http = httpx.Client(headers=self.headers, timeout=self.timeout, limits=self.limits)

    def close(self) -> None:
        self._http.close()

    def get_json(self, path: str, timeout: httpx.Timeout | None = None) -> Any:
        return self._json("GET", path, None, timeout)

    def post_json(self, path: str, payload: dict[str, Any], timeout: httpx.Timeout | None = None) -> Any:
        return self._json("POST", path, payload, timeout)

    def _json(
        self, method: str, path: str, payload: dict[str, Any] | None, timeout: httpx.Timeout | None
    ) -> Any:
        with self.stream(path, payload, timeout, method=method, accept=JSON) as response:
            return self.decode(response.read(), self.url(path))

    @contextmanager
    def stream(
        self,
        path: str,
        payload: dict[str, Any] | None,
        timeout: httpx.Timeout | None = None,
        *,
        method: str = "POST",
        accept: str = EVENTS,
    ) -> Iterator[httpx.Response]:
        """The open response of a request whose status was below 400; closing it cancels the request.

        Failures while the caller reads the body are translated too."""
        url, timeout = self.url(path), timeout or self.timeout
        try:
            with self._http.stream(
                method, url, json=payload, timeout=timeout, headers={"Accept": accept}
            ) as response:
                if response.status_code >= 400:
                    raise self.refusal(response, response.read(), url)
                yield response
        except httpx.HTTPError as exc:
            raise self.failure(exc, url, timeout) from None

    def events(self, response: httpx.Response) -> Iterator[Event]:
        decoder = self.decoder(response)
        for line in response.iter_lines():
            if (event := decoder.feed(line)) is not None:
                yield event
            elif decoder.done:
                return
        raise decoder.unfinished()


class AsyncOpenAIClient(_Endpoint):
    """The same client on an event loop, for many requests in flight at once."""

    def _connect(self) -> None:
        self._http = httpx.AsyncClient(headers=self.headers, timeout=self.timeout, limits=self.limits)

    async def __aenter__(self) -> AsyncOpenAIClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self._http.aclose()

    @asynccontextmanager
    async def stream(
        self, path: str, payload: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """As `OpenAIClient.stream`: a POST whose status was below 400, failures translated."""
        url = self.url(path)
        sent = {"Accept": EVENTS, **(headers or {})}
        try:
            async with self._http.stream("POST", url, json=payload, headers=sent) as response:
                if response.status_code >= 400:
                    raise self.refusal(response, await response.aread(), url)
                yield response
        except httpx.HTTPError as exc:
            raise self.failure(exc, url, self.timeout) from None

    async def events(self, response: httpx.Response) -> AsyncIterator[Event]:
        decoder = self.decoder(response)
        async for line in response.aiter_lines():
            if (event := decoder.feed(line)) is not None:
                yield event
            elif decoder.done:
                return
        raise decoder.unfinished()
