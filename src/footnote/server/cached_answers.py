"""Serving near-duplicate questions from the answer cache (`answer_cache_size` > 0).

A hit replays the stored sources and answer without taking a generation slot or calling
the model; a miss runs as usual and stores its result once the answer is complete.
A follow-up in a conversation is looked up by its condensed, standalone question (so "and
the second one?" after two different questions are two entries), which takes the model:
it is condensed in a generation slot first, and the run then reuses that question.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Hashable
from dataclasses import dataclass, replace

import anyio

from footnote.answer.cache import AnswerCache
from footnote.answer.result import AnswerEvent, DoneEvent, SourcesEvent
from footnote.answer.usage import TokenUsage
from footnote.core.language import detect_language
from footnote.models.base import Vector
from footnote.server.admission import Slot
from footnote.server.answers import AnswerRequest, AnswerRun, start_answer
from footnote.server.sources import FilteredRetriever
from footnote.server.state import ServerState

Cached = tuple[SourcesEvent, DoneEvent]


@dataclass(frozen=True)
class Lookup:
    cache: AnswerCache[Cached]
    vector: Vector
    key: Hashable
    version: str


class CachedRun(AnswerRun):
    """A finished answer from the cache, told as a run's events."""

    def __init__(self, state: ServerState, request: AnswerRequest, cached: Cached) -> None:
        # No worker, no slot: nothing is generated.
        self.state, self.request, self._cached = state, request, cached

    def cancel(self) -> None:
        pass

    async def events(self) -> AsyncGenerator[AnswerEvent, None]:
        for event in self._cached:
            yield event


class CachingRun(AnswerRun):
    """A generated answer that is stored in the cache once it is complete."""

    def __init__(self, state: ServerState, request: AnswerRequest, slot: Slot, lookup: Lookup) -> None:
        self._lookup = lookup
        super().__init__(state, request, slot)

    async def events(self) -> AsyncGenerator[AnswerEvent, None]:
        sources: SourcesEvent | None = None
        async for event in super().events():
            if isinstance(event, SourcesEvent):
                sources = event
            elif isinstance(event, DoneEvent) and sources is not None:
                found = self._lookup
                query = self.request.standalone.query if self.request.standalone else self.request.question
                found.cache.put(found.vector, query, found.key, found.version, (sources, event))
            yield event


def _cache(state: ServerState) -> AnswerCache[Cached] | None:
    settings = state.settings
    if settings.answer_cache_size <= 0:
        return None
    if state.answers is None:
        state.answers = AnswerCache(
            settings.answer_cache_size, settings.answer_cache_ttl, settings.answer_cache_threshold
        )
    cache: AnswerCache[Cached] = state.answers
    return cache


def _describe(state: ServerState, question: str) -> tuple[Vector, str]:
    app = state.models.retrieval()
    return app.embedder.embed(question), app.index_version()


def _condensed(state: ServerState, request: AnswerRequest) -> AnswerRequest:
    """The request with its follow-up condensed into a standalone question (blocking; holds
    the model)."""
    usage = TokenUsage()
    with state.models.generation_lock:
        app = state.models.generation()
        # Searched as the answer will be: only in the collections the request may read.
        retriever = FilteredRetriever(app.retriever(), request.source_filter)
        engine = app.answer_engine(retriever=retriever, generation=request.generation)
        # the model that reads the question's language condenses it, as it will answer it
        language = engine.for_language(detect_language(request.question))
        standalone = language.condense(request.question, request.history, usage)
    return replace(request, standalone=standalone, condense_usage=usage)


async def start_cached_answer(state: ServerState, request: AnswerRequest) -> AnswerRun:
    """A cached answer to a near-duplicate question, or a new run (429 when the pool is full)."""
    cache = _cache(state)
    if cache is None:
        return await start_answer(state, request)
    # Refused before the question is embedded: a request turned away costs nothing.
    state.generation.check(request.request_class)
    slot = await state.generation.acquire(request.request_class) if request.history else None
    try:
        if request.history:
            request = await anyio.to_thread.run_sync(_condensed, state, request)
        query = request.standalone.query if request.standalone else request.question
        vector, version = await state.run_work(_describe, state, query)
        # The key is what decides the answer besides the query: the conversation only through
        # the standalone question it was condensed to, and the client's instruction.
        options = replace(
            request,
            question="",
            history=(),
            standalone=None,
            condense_usage=None,
            generation=replace(request.generation, deadline=None),
        )
        lookup = Lookup(cache, vector, repr(options), version)
        cached = cache.get(vector, query, lookup.key, version)
        if cached is not None:
            if slot is not None:
                slot.release()
            return CachedRun(state, request, cached)
        slot = slot or await state.generation.acquire(request.request_class)
        return CachingRun(state, request, slot, lookup)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
