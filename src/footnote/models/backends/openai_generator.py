"""Generation through an OpenAI-compatible server (vLLM, llama.cpp server, Ollama, LM Studio).

`POST {base_url}/chat/completions` with `stream: true`; the reply is server-sent events
whose `choices[0].delta.content` pieces are yielded as they arrive. Closing the iterator
(the client went away) closes the connection, which these servers take as a cancel.
Every failure is translated by `OpenAIClient`: a `BackendUnavailable` (down, HTTP 5xx,
malformed reply, stalled stream: another backend may do better) or a `BackendError`
(the request itself was refused, HTTP 4xx), each naming the URL and the fix.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from footnote.models.backends.errors import BackendError, BackendTimeout, BackendUnavailable
from footnote.models.backends.openai_client import JSON, OpenAIClient
from footnote.models.base import GenerationParams, Generator, Message


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
        self.client = OpenAIClient(
            base_url,
            api_key,
            timeout=timeout,
            connect_timeout=connect_timeout,
            limits=httpx.Limits(max_connections=max_connections),
        )
        self.base_url = self.client.base_url
        self.model = model
        self.context_length = context_length
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.name = name or f"{model}@{self.base_url}"

    def close(self) -> None:
        self.client.close()

    def health(self, timeout: float = 2.0) -> bool:
        """Does the server answer `GET /models` with JSON?"""
        try:
            return isinstance(self.client.get_json("/models", httpx.Timeout(timeout)), dict)
        except BackendError:
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
        if params.repeat_penalty != 1.0:
            # The OpenAI API's nearest knob: an additive penalty on tokens already written.
            payload["frequency_penalty"] = round(params.repeat_penalty - 1.0, 3)
        return payload

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        url = self.client.url("/chat/completions")
        timeout = self._timeout(params.deadline, url)
        with self.client.stream("/chat/completions", self.payload(messages, params), timeout) as response:
            if response.headers.get("content-type", "").startswith(JSON):
                yield self._whole_reply(response.read(), url)
                return
            for event in self.client.events(response):
                if params.deadline is not None and time.monotonic() > params.deadline:
                    raise BackendTimeout(f"the deadline passed while {url} was still answering")
                if event.text:
                    yield event.text

    def _timeout(self, deadline: float | None, url: str) -> httpx.Timeout:
        """The read timeout, shortened so that no read outlasts the request's deadline."""
        read = self.timeout
        if deadline is not None:
            read = min(read, deadline - time.monotonic())
            if read <= 0:
                raise BackendTimeout(f"the deadline passed before {url} was asked")
        return httpx.Timeout(read, connect=min(self.connect_timeout, read))

    def _whole_reply(self, body: bytes, url: str) -> str:
        """The answer of a server that ignored `stream: true` and sent one JSON reply."""
        reply = self.client.decode(body, url)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendUnavailable(
                f"{url} sent a malformed reply ({body[:80]!r}: {exc}); {self.client.hint}"
            ) from None
        if not isinstance(content, str):
            raise BackendUnavailable(f"{url} sent message.content that is not text; {self.client.hint}")
        return content
