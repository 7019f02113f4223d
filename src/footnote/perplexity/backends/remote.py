"""Scoring through a remote OpenAI-compatible server that echoes prompt log-probabilities.

The window is sent as token ids to `POST {base_url}/completions` with `echo: true,
logprobs: 1, max_tokens: 0`, the way vLLM scores a prompt; `token_logprobs[i]` is the
log-probability of token i given the tokens before it (null for the first). Tokens are
made locally by a tokenizer that must match the server's model.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

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
        self.base_url = base_url.rstrip("/")
        self.tokenizer = tokenizer
        self._api_key = api_key
        self._timeout = timeout
        listed = self._first_listed_model() if model is None or context_length is None else {}
        self.model = model or str(listed.get("id") or "")
        if not self.model:
            raise RemoteScorerError(f"{self.base_url}/models lists no model; name one explicitly")
        self.context_length = context_length or int(listed.get("max_model_len") or 1 << 20)
        self.name = f"{self.model}@{self.base_url}"

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
        url = self.base_url + path
        headers = {"Accept": "application/json"}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body else "GET")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise RemoteScorerError(f"{url} answered HTTP {exc.code}: {detail}; {_HINT}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteScorerError(f"cannot reach {url} ({reason}); is the server running?") from None
        except json.JSONDecodeError:
            raise RemoteScorerError(
                f"{url} did not answer with JSON; is it an OpenAI-compatible API?"
            ) from None
