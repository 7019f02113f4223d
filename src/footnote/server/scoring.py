"""The server's scorer: the configured LLM opened once for prompt log-probabilities.

Scoring uses its own llama.cpp instance (answers keep theirs), loaded on the first
scoring request; one window is evaluated at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from footnote.config import Settings
from footnote.errors import FootnoteError
from footnote.models.gguf import answer_model_spec
from footnote.perplexity import ScoringOptionError, TokenScorer, open_scorer
from footnote.server.errors import ApiError

T = TypeVar("T")


class ScoringHost:
    def __init__(self, settings: Settings, opener: Callable[[], TokenScorer] | None = None) -> None:
        self.settings = settings
        self._opener = opener or self._open_llm
        self._scorer: TokenScorer | None = None
        self._lock = threading.Lock()

    def _open_llm(self) -> TokenScorer:
        spec = answer_model_spec(self.settings)
        return open_scorer(spec, self.settings, context_length=self.settings.score_context_tokens)

    def use(self, work: Callable[[TokenScorer], T]) -> T:
        """Run `work` with the scorer, alone (loads the model on first use)."""
        with self._lock:
            if self._scorer is None:
                try:
                    self._scorer = self._opener()
                except ScoringOptionError as exc:
                    raise ApiError(503, f"the scoring model is misconfigured: {exc}") from exc
                except FootnoteError as exc:
                    raise ApiError(
                        503, f"the scoring model could not be loaded: {exc}", code="model_unavailable"
                    ) from exc
            return work(self._scorer)

    def close(self) -> None:
        with self._lock:
            if self._scorer is not None:
                self._scorer.close()
                self._scorer = None
