"""POST /v1/search (Perplexity Search API), POST /v1/query and POST /query (answer in one call)."""

from __future__ import annotations

import uuid
from pathlib import Path

from fastapi import APIRouter

from footnote.application.answers import AnswerRequest
from footnote.application.sources import source_uri
from footnote.retrieval.source_filter import SourceFilter
from footnote.server.answers import collect, start_answer
from footnote.server.request_class import ClassHeader, RequestClass
from footnote.server.schemas.chat import SearchResult, search_results
from footnote.server.schemas.search import (
    QueryRequest,
    QueryResponse,
    QuerySource,
    SearchRequest,
    SearchResponse,
    SimpleQueryRequest,
)
from footnote.server.state import Caller, ServerState, State

router = APIRouter(tags=["search"])
CHARS_PER_TOKEN = 4


def _search_all(
    state: ServerState, queries: list[str], limit: int, source_filter: SourceFilter, snippet_chars: int
) -> list[list[SearchResult]]:
    service = state.models.retrieval().answers
    hits = [service.search(query, limit, source_filter) for query in queries]
    return [search_results(service.describe(found, snippet_chars).results) for found in hits]


@router.post("/v1/search", response_model=SearchResponse)
async def search(body: SearchRequest, state: State, access: Caller) -> SearchResponse:
    """Ranked passages from the documents, in the Perplexity Search API shape."""
    queries = [body.query] if isinstance(body.query, str) else body.query
    source_filter = SourceFilter.parse(
        body.search_domain_filter, body.search_recency_filter, collections=access.readable(body.collections)
    )
    snippet_chars = body.max_tokens_per_page * CHARS_PER_TOKEN
    results = await state.run_work(
        _search_all, state, queries, body.max_results, source_filter, snippet_chars
    )
    return SearchResponse(
        id=str(uuid.uuid4()), results=results[0] if isinstance(body.query, str) else results
    )


async def _answer(
    state: ServerState, question: str, top_k: int, source_filter: SourceFilter, request_class: RequestClass
) -> QueryResponse:
    generation = state.application.answers.generation()
    request = AnswerRequest(question, generation, top_k, source_filter)
    run = await start_answer(state, request, request_class)
    answer = await collect(run)
    sources = [
        QuerySource(
            title=hit.title or Path(hit.path).name, url=source_uri(hit.path, hit.url), score=hit.score
        )
        for hit in answer.sources
    ]
    return QueryResponse(answer=answer.text, sources=sources, footnote=answer.detail())


@router.post("/v1/query", response_model=QueryResponse)
async def query(
    body: QueryRequest, state: State, access: Caller, request_class: ClassHeader = "api"
) -> QueryResponse:
    """Answer a question in one call; `source_preference` puts matching sources first."""
    preference = (
        [body.source_preference] if isinstance(body.source_preference, str) else body.source_preference
    )
    source_filter = SourceFilter.parse(None, prefer=preference, collections=access.readable(body.collections))
    return await _answer(state, body.query, state.settings.top_k, source_filter, request_class)


@router.post("/query", response_model=QueryResponse)
async def simple_query(
    body: SimpleQueryRequest, state: State, access: Caller, request_class: ClassHeader = "api"
) -> QueryResponse:
    """Answer a question in one call (the `{q}` shape some tools send)."""
    top_k = body.max_results or state.settings.top_k
    source_filter = SourceFilter(collections=access.readable(body.collections))
    return await _answer(state, body.q, top_k, source_filter, request_class)
