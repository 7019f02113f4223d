"""Legacy completions used for scoring (vLLM's `echo` + `logprobs` dialect) and /v1/perplexity."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from footnote.perplexity import PerplexityResult, TokenScore
from footnote.server.schemas import Text

MAX_TOP_LOGPROBS = 20
TokenIds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1, max_length=131_072)]


class CompletionRequest(BaseModel):
    """Scores the prompt: `echo: true` with `max_tokens: 0` returns its token log-probabilities.

    Unknown fields are accepted and ignored, as OpenAI-compatible servers do.
    """

    model_config = ConfigDict(strict=True)

    model: str | None = Field(None, max_length=256, description="the served LLM (GET /v1/models); optional")
    prompt: Text | TokenIds | Annotated[list[Text], Field(min_length=1, max_length=1)] = Field(
        description="text, or token ids of the served model's tokenizer"
    )
    echo: bool = Field(False, description="must be true: the prompt's log-probabilities come back")
    logprobs: int | None = Field(
        None, ge=0, le=MAX_TOP_LOGPROBS, description="how many likeliest tokens per position"
    )
    max_tokens: int | None = Field(0, ge=0, description="must be 0: footnote scores, it does not continue")
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    stream: bool = False
    n: int = Field(1, ge=1, le=1)


class CompletionLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float | None] = Field(description="null for the first token, which has no context")
    top_logprobs: list[dict[str, float] | None] | None
    text_offset: list[int]


class CompletionChoice(BaseModel):
    index: int
    text: str
    logprobs: CompletionLogprobs | None
    finish_reason: Literal["length", "stop"]


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Completion(BaseModel):
    """A legacy text completion (`text_completion`): here, a scored prompt echoed back."""

    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: CompletionUsage


class PerplexityRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    text: Text = Field(min_length=1, description="the text to score")
    protocol: Literal["hf", "llama.cpp"] = Field(
        "hf", description="hf: sliding windows (stride); llama.cpp: whole chunks, second half scored"
    )
    context_length: int = Field(512, ge=2, description="tokens per window")
    stride: int | None = Field(None, ge=1, description="hf only; default: the context length (no overlap)")
    max_tokens: int | None = Field(None, ge=2, description="score only the first N tokens")
    tokens: bool = Field(False, description="also return every scored token's log-probability")


class PerplexityResponse(PerplexityResult):
    """The perplexity result itself, tagged as an API object, with every scored token when asked."""

    object: Literal["perplexity"] = "perplexity"
    extra: dict[str, Any] = Field(default_factory=dict, exclude=True)
    tokens: list[TokenScore] | None = None

    @classmethod
    def of(cls, result: PerplexityResult, tokens: list[TokenScore] | None = None) -> PerplexityResponse:
        return cls(**dict(result), tokens=tokens)
