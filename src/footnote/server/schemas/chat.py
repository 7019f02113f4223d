"""Chat completions: the OpenAI request and response, with Perplexity Sonar's extra fields.

Unknown request fields (`user`, `presence_penalty`, `logit_bias`, ...) are accepted and
ignored, so clients written for other servers work unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from footnote.answer.result import AnswerDetail, StepUsage
from footnote.application.sources import SourceDescription
from footnote.server.schemas import Text, omitted_when_none

Recency = Literal["hour", "day", "week", "month", "year"]
FinishReason = Literal["stop", "length"]
MAX_DOMAIN_FILTERS = 20
StopText = Annotated[Text, Field(max_length=256)]
DomainEntry = Annotated[str, Field(max_length=253)]
CollectionName = Annotated[str, Field(min_length=1, max_length=64)]
MAX_COLLECTIONS = 50
Collections = Annotated[
    list[CollectionName] | None,
    Field(
        None,
        max_length=MAX_COLLECTIONS,
        description="footnote: the collections to answer from; every one the key can read when absent",
    ),
]


class ContentPart(BaseModel):
    """One part of a message's content; only `text` parts are read."""

    model_config = ConfigDict(strict=True)

    type: str = Field(max_length=64)
    text: Text | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(strict=True)

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Text | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "\n".join(part.text for part in parts if part.type == "text" and part.text)


class StreamOptions(BaseModel):
    model_config = ConfigDict(strict=True)

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    # Strict: JSON `true` is not the number 1, nor "5" the number 5.
    model_config = ConfigDict(strict=True)

    model: str | None = Field(None, max_length=256, description="accepted and ignored: one LLM is served")
    messages: list[ChatMessage] = Field(min_length=1, max_length=256)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1, le=1_000_000, description="capped by the server")
    max_completion_tokens: int | None = Field(None, ge=1, le=1_000_000, description="same as max_tokens")
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, ge=0.0, le=1.0)
    stop: StopText | Annotated[list[StopText], Field(max_length=4)] | None = Field(
        None, description="up to 4 strings that end the answer"
    )
    seed: int | None = Field(None, ge=0, le=2**32 - 1)
    n: int | None = Field(None, ge=1, le=1, description="only one choice is generated")
    search_domain_filter: list[DomainEntry] | None = Field(
        None,
        max_length=MAX_DOMAIN_FILTERS,
        description="domains or file-path pieces to include; prefix `-` to exclude",
    )
    search_recency_filter: Recency | None = None
    collections: Collections = None
    return_related_questions: bool = Field(
        False, description="suggest up to 5 follow-up questions grounded in the cited sources"
    )
    priority: int | None = Field(
        None, ge=-100, le=100, description="footnote: larger is served first when backends queue requests"
    )

    def stop_sequences(self) -> tuple[str, ...]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return tuple(stop for stop in stops if stop)


class SearchResult(BaseModel):
    title: str
    url: str
    date: str | None = None
    last_updated: str | None = None
    snippet: str
    source: Literal["attachment"] = "attachment"


def search_results(sources: Sequence[SourceDescription]) -> list[SearchResult]:
    """Perplexity's `search_results` for described sources: each is a document of the user's."""
    return [
        SearchResult(
            title=source.title,
            url=source.url,
            date=source.date,
            last_updated=source.last_updated,
            snippet=source.snippet,
            source="attachment",
        )
        for source in sources
    ]


class Usage(BaseModel):
    """Tokens of every model call the answer made, by the model's tokenizer."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    steps: dict[str, StepUsage] = Field(
        default_factory=dict, description="the same per step: answer, condense, related"
    )


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: FinishReason


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    citations: list[str] = Field(description="source URIs; `[n]` in the text refers to citations[n-1]")
    search_results: list[SearchResult]
    related_questions: list[str] | None = omitted_when_none(
        "follow-up questions the sources can answer; present when return_related_questions"
    )
    footnote: AnswerDetail = Field(description="footnote's checked sentences and span-level citations")


class Delta(BaseModel):
    role: Literal["assistant"] | None = omitted_when_none()
    content: str | None = omitted_when_none()


class ChunkChoice(BaseModel):
    index: int
    delta: Delta
    finish_reason: FinishReason | None = None


class ChatCompletionChunk(BaseModel):
    """One `data:` line of a streamed completion; the stream ends with `data: [DONE]`."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = omitted_when_none("in a last chunk of its own, with `stream_options.include_usage`")
    citations: list[str] | None = omitted_when_none("in the first chunk and the one that finishes")
    search_results: list[SearchResult] | None = omitted_when_none()
    related_questions: list[str] | None = omitted_when_none("in the finishing chunk, when asked for")
    footnote: AnswerDetail | None = omitted_when_none("in the finishing chunk")
