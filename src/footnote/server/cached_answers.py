"""Serving near-duplicate questions from the answer cache (`answer_cache_size` > 0).

A hit replays the stored sources and answer without taking a generation slot or calling
the model; a miss runs as usual and stores its result once the answer is complete.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Hashable
from dataclasses import dataclass, replace

from footnote.answer.cache import AnswerCache, index_version
from footnote.models.base import Vector
from footnote.server.admission import Slot
from footnote.server.answers import (
    AnswerRequest,
    AnswerRun,
    RunEvent,
    RunFinished,
    SourcesReady,
    start_answer,
)
from footnote.server.state import ServerState

Cached = tuple[SourcesReady, RunFinished]


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

    async def events(self) -> AsyncGenerator[RunEvent, None]:
        for event in self._cached:
            yield event


class CachingRun(AnswerRun):
    """A generated answer that is stored in the cache once it is complete."""

    def __init__(self, state: ServerState, request: AnswerRequest, slot: Slot, lookup: Lookup) -> None:
        self._lookup = lookup
        super().__init__(state, request, slot)

    async def events(self) -> AsyncGenerator[RunEvent, None]:
        sources: SourcesReady | None = None
        async for event in super().events():
            if isinstance(event, SourcesReady):
                sources = event
            elif isinstance(event, RunFinished) and sources is not None:
                found = self._lookup
                found.cache.put(
                    found.vector, self.request.question, found.key, found.version, (sources, event)
                )
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
    return app.embedder.embed(question), index_version(app.catalog)


async def start_cached_answer(state: ServerState, request: AnswerRequest) -> AnswerRun:
    """A cached answer to a near-duplicate question, or a new run (429 when the pool is full)."""
    cache = _cache(state)
    if cache is None:
        return await start_answer(state, request)
    vector, version = await state.run_work(_describe, state, request.question)
    options = replace(request, question="", generation=replace(request.generation, deadline=None))
    lookup = Lookup(cache, vector, repr(options), version)
    cached = cache.get(vector, request.question, lookup.key, version)
    if cached is not None:
        return CachedRun(state, request, cached)
    slot = await state.generation.acquire()
    try:
        return CachingRun(state, request, slot, lookup)
    except BaseException:
        slot.release()
        raise
