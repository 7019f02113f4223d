"""Scoring through a remote OpenAI-compatible server that echoes prompt log-probabilities.

The window is sent as token ids to `POST {base_url}/completions` with `echo: true,
logprobs: 1, max_tokens: 0`, the way vLLM scores a prompt; `token_logprobs[i]` is the
log-probability of token i given the tokens before it (null for the first). Tokens are
made locally by a tokenizer that must match the server's model. The HTTP side (and what
its failures say) is the shared `OpenAIClient`; its errors come out as `RemoteScorerError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from footnote.models.backends.errors import BackendError
from footnote.models.backends.openai_client import OpenAIClient
from footnote.models.scoring import Tokenizer, TokenScorer
from footnote.perplexity.errors import RemoteScorerError

_HINT = "the server must accept token-id prompts with echo and prompt logprobs (vLLM and footnote do)"


class RemoteScorer(TokenScorer):
    def __init__(
        self,
        base_url: str,
        tokenizer: Tokenizer,
        model: str | None = None,
        context_length: int | None = None,
        api_key: str | None = None,
        timeout: float = 300.0,
    ) -> None:
        self.tokenizer = tokenizer
        self._client = OpenAIClient(
            base_url,
            api_key,
            timeout=timeout,
            connect_timeout=timeout,
            hint=_HINT,
            key_setting="FOOTNOTE_REMOTE_API_KEY",
        )
        self.base_url = self._client.base_url
        listed = self._first_listed_model() if model is None or context_length is None else {}
        self.model = model or str(listed.get("id") or "")
        if not self.model:
            raise RemoteScorerError(f"{self.base_url}/models lists no model; name one explicitly")
        self.context_length = context_length or int(listed.get("max_model_len") or 1 << 20)
        self.name = f"{self.model}@{self.base_url}"

    def close(self) -> None:
        self._client.close()

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        payload = {
            "model": self.model,
            "prompt": list(token_ids),
            "echo": True,
            "logprobs": 1,
            "max_tokens": 0,
            "temperature": 0.0,
        }
        reply = self._request("/completions", payload)
        try:
            values = reply["choices"][0]["logprobs"]["token_logprobs"]
        except (KeyError, IndexError, TypeError):
            raise RemoteScorerError(
                f"{self.base_url}/completions returned no choices[0].logprobs.token_logprobs; {_HINT}"
            ) from None
        scored = values[first_scored : len(token_ids)] if isinstance(values, list) else []
        if len(scored) != len(token_ids) - first_scored or any(v is None for v in scored):
            raise RemoteScorerError(
                f"{self.base_url}/completions returned {len(values or [])} prompt log-probabilities "
                f"for {len(token_ids)} tokens; {_HINT}"
            )
        return [float(v) for v in scored]

    def _first_listed_model(self) -> dict[str, Any]:
        reply = self._request("/models", None)
        data = reply.get("data") if isinstance(reply, dict) else None
        return data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}

    def _request(self, path: str, payload: dict[str, Any] | None) -> Any:
        """A GET (no payload) or POST of JSON; any failure is a `RemoteScorerError` naming the fix."""
        try:
            if payload is None:
                return self._client.get_json(path)
            return self._client.post_json(path, payload)
        except BackendError as exc:
            raise RemoteScorerError(str(exc)) from None
