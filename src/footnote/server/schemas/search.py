"""Search and the simple question shapes: Perplexity's Search API, `/v1/query` and `/query`."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from footnote.answer.result import AnswerDetail
from footnote.server.schemas import Text
from footnote.server.schemas.chat import MAX_DOMAIN_FILTERS, Collections, DomainEntry, Recency, SearchResult

QueryText = Annotated[Text, Field(min_length=1, max_length=4000)]
PreferenceEntry = Annotated[str, Field(max_length=253)]


class SearchRequest(BaseModel):
    # Strict: JSON `true` is not the number 1, nor "5" the number 5.
    model_config = ConfigDict(strict=True)

    query: QueryText | Annotated[list[QueryText], Field(min_length=1, max_length=5)] = Field(
        description="one query, or up to 5 answered in one call (results then come per query)"
    )
    max_results: int = Field(10, ge=1, le=20)
    max_tokens_per_page: int = Field(
        1024, ge=1, le=100_000, description="snippet length, about 4 chars a token"
    )
    search_domain_filter: list[DomainEntry] | None = Field(None, max_length=MAX_DOMAIN_FILTERS)
    search_recency_filter: Recency | None = None
    collections: Collections = None


class SearchResponse(BaseModel):
    id: str
    results: list[SearchResult] | list[list[SearchResult]]


class QueryRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    query: QueryText
    source_preference: PreferenceEntry | Annotated[list[PreferenceEntry], Field(max_length=20)] | None = (
        Field(None, description="domains or file-path pieces whose sources are offered to the model first")
    )
    collections: Collections = None


class SimpleQueryRequest(BaseModel):
    model_config = ConfigDict(strict=True)

    q: QueryText
    model: str | None = Field(None, max_length=256, description="accepted and ignored: one LLM is served")
    max_results: int | None = Field(None, ge=1, le=20, description="sources offered to the model")
    collections: Collections = None


class QuerySource(BaseModel):
    title: str
    url: str
    score: float


class QueryResponse(BaseModel):
    answer: str
    sources: list[QuerySource]
    footnote: AnswerDetail = Field(description="footnote's checked sentences and span-level citations")
