"""Running negative log-likelihood statistics and the perplexity they give."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field


class RunningNLL:
    """Mean and variance of per-token NLL, merged window by window (Chan et al.'s update)."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self._m2 = 0.0  # sum of squared deviations from the mean

    def add(self, logprobs: Sequence[float]) -> None:
        n = len(logprobs)
        if n == 0:
            return
        batch_mean = -math.fsum(logprobs) / n
        batch_m2 = math.fsum((-lp - batch_mean) ** 2 for lp in logprobs)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * n / total
        self._m2 += batch_m2 + delta * delta * self.count * n / total
        self.count = total

    @property
    def perplexity(self) -> float:
        return math.exp(self.mean) if self.count else math.nan

    @property
    def nll_stderr(self) -> float | None:
        """Standard error of the mean NLL: sqrt(sample variance / N), as llama-perplexity computes it."""
        if self.count < 2:
            return None
        return math.sqrt(self._m2 / (self.count - 1) / self.count)

    @property
    def perplexity_stderr(self) -> float | None:
        """Delta method: d exp(x) = exp(x) dx, so SE(PPL) = PPL * SE(mean NLL)."""
        stderr = self.nll_stderr
        return None if stderr is None else self.perplexity * stderr


class ProtocolInfo(BaseModel):
    """How the text was cut into windows: report it with every number."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="hf or llama.cpp")
    context_length: int
    stride: int
    bos: bool = Field(description="a BOS token starts the text (hf) or every chunk (llama.cpp)")
    max_tokens: int | None = None


class PerplexityResult(BaseModel):
    """One text's perplexity under one model, with how it was measured. A pydantic model, so
    that the HTTP API sends this very shape (`server.schemas.completions.PerplexityResponse`)."""

    model_config = ConfigDict(frozen=True)

    model: str
    protocol: ProtocolInfo
    tokens_read: int = Field(description="tokens of the text (after max_tokens), BOS included")
    tokens_scored: int
    windows: int
    nll_mean: float
    nll_stderr: float | None
    perplexity: float
    perplexity_stderr: float | None
    seconds: float
    extra: dict[str, Any] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tokens_per_second(self) -> float:
        return self.tokens_read / self.seconds if self.seconds > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()
