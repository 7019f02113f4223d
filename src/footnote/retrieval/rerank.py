"""An optional second stage: rescore the best fused candidates with a slower, sharper model.

Two scorers implement the `Reranker` protocol:

- `CrossEncoderReranker`: a sentence-transformers CrossEncoder read from a local
  folder or the local Hugging Face cache (never downloaded).
- `LlmReranker`: the configured llama.cpp LLM asked whether each passage answers
  the query; the score is the log-probability of " Yes" as the next token, asked with
  the yes/no scorer the LLM support judge shares (`footnote.models.yes_no`).

Only the first `candidates` hits are rescored; the rest keep their fused order behind them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from footnote.core.hits import SearchHit
from footnote.errors import ConfigError, ModelError
from footnote.models.cross_encoder import open_cross_encoder
from footnote.models.scoring import ScorerOpener
from footnote.models.yes_no import YesNoScorer

if TYPE_CHECKING:
    from footnote.config import Settings
    from footnote.models.scoring import TokenScorer


class Reranker(ABC):
    """Scores passages against a query. Subclasses implement `score` only; higher is more relevant."""

    name: str = "reranker"

    @abstractmethod
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in order."""

    def rerank(self, query: str, hits: Sequence[SearchHit], candidates: int) -> list[SearchHit]:
        """The first `candidates` hits sorted by score (ties keep fused order), then the rest unchanged."""
        head, tail = list(hits[:candidates]), list(hits[candidates:])
        if not head:
            return list(tail)
        scores = self.score(query, [hit.text for hit in head])
        if len(scores) != len(head):
            raise ModelError(f"reranker {self.name} returned {len(scores)} scores for {len(head)} passages")
        values = [float(value) for value in scores]
        scored = [replace(hit, rerank_score=value) for hit, value in zip(head, values, strict=True)]
        order = sorted(range(len(scored)), key=lambda i: (-values[i], i))
        return [scored[i] for i in order] + tail


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder, loaded from local files only."""

    def __init__(self, model: str, batch_size: int = 32) -> None:
        self._model: Any = open_cross_encoder(model, "FOOTNOTE_RERANK_MODEL")
        self.name = model
        self.batch_size = batch_size

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        scores = self._model.predict([(query, text) for text in texts], batch_size=self.batch_size)
        return [float(value) for value in scores]


RELEVANCE_PROMPT = (
    "Passage: {passage}\n\n"
    "Question: {query}\n\n"
    "Does the passage help answer the question? Answer Yes or No.\n"
    "Answer:"
)


class LlmReranker(Reranker):
    """Scores each passage by log P(" Yes") after a relevance question, from a token scorer."""

    def __init__(self, scorer: TokenScorer, max_query_tokens: int = 64) -> None:
        self.question = YesNoScorer(scorer, RELEVANCE_PROMPT, "a cross-encoder reranker")
        self.name = f"llm:{scorer.name}"
        self.max_query_tokens = max_query_tokens

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        question = self.question
        query_ids = question.tokenize(query)[: self.max_query_tokens]
        room = question.context_length - question.prompt_tokens - len(query_ids)
        if room < 8:
            raise ConfigError(
                f"the reranker's window of {question.context_length} tokens leaves no room for a passage"
            )
        return [question.log_yes(question.tokenize(text)[:room], query_ids) for text in texts]

    def close(self) -> None:
        self.question.close()


def open_reranker(settings: Settings, open_scorer: ScorerOpener | None = None) -> Reranker | None:
    """The reranker the settings name, or None when reranking is off; an LLM reranker scores with
    what `open_scorer` opens (`footnote.perplexity.scorer_opener(settings)`)."""
    if settings.rerank == "none":
        return None
    if settings.rerank == "cross-encoder":
        if not settings.rerank_model:
            raise ConfigError(
                "FOOTNOTE_RERANK=cross-encoder needs FOOTNOTE_RERANK_MODEL: a CrossEncoder folder or model id"
            )
        return CrossEncoderReranker(settings.rerank_model)
    if open_scorer is None:
        raise ValueError("an LLM reranker needs a scorer opener (footnote.perplexity.scorer_opener)")
    return LlmReranker(open_scorer(settings.rerank_model or settings.llm, 512))
