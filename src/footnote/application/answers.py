"""The answer service: one path from a request to its answer, for every edge.

`AnswerService.run(request)` condenses a follow-up, looks the question up in the answer cache,
retrieves within the request's collections and source filter, and answers; the HTTP routes, the
CLI and the evaluations all call it, and `describe` tells its sources as a client is shown them.

The steps before the answer and their order are given in one place, `AnswerService.steps`: each
names what it holds while it runs (`MODEL`: condensing; `EMBEDDER`: the cache look-up), so that a
server runs them on that one's pool without listing them again; `answer` then holds the model,
and an answer found in the cache holds neither.

With the answer cache on, a follow-up is looked up by its condensed, standalone question (so
"and the second one?" after two different questions are two entries), which takes the model:
it is condensed first, and the answer then reuses that question. With the cache off, the engine
condenses it, reusing what it searched for deciding whether the follow-up leans on the turns.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from footnote.answer.cache import AnswerCache
from footnote.answer.engine import AnswerEngine
from footnote.answer.history import Standalone
from footnote.answer.result import Answer, AnswerEvent, DoneEvent, SourcesEvent
from footnote.answer.streaming import final
from footnote.answer.usage import TokenUsage
from footnote.application.sources import DescribedSources, describe_sources
from footnote.core.hits import SearchHit
from footnote.core.language import detect_language
from footnote.models.base import GenerationParams, Message, Vector
from footnote.retrieval.source_filter import FilteredRetriever, SourceFilter

if TYPE_CHECKING:
    from footnote.application.app import Application

# What the cache keeps of an answer: its sources and its end, replayed as they were sent.
Cached = tuple[SourcesEvent, DoneEvent]


@dataclass(frozen=True)
class AnswerRequest:
    """A question and everything that decides its answer besides the documents."""

    question: str
    generation: GenerationParams | None = None  # None: the settings'
    top_k: int | None = None  # sources retrieved; None: the settings'
    source_filter: SourceFilter = field(default_factory=SourceFilter)
    related_questions: bool = False  # also when the settings ask for them
    # A conversation: the earlier user and assistant turns, and the client's own system message.
    history: tuple[Message, ...] = ()
    instruction: str = ""
    # Sources given by the caller: answered from them without retrieval (an evaluation's passages).
    sources: tuple[SearchHit, ...] | None = None
    # The question condensed from the conversation, when that was done before the answer (the
    # answer cache keys on it), with the tokens condensing took.
    standalone: Standalone | None = None
    condense_usage: TokenUsage | None = None

    @property
    def query(self) -> str:
        """What the sources are found by: the standalone question once condensed."""
        return self.standalone.query if self.standalone else self.question


@dataclass(frozen=True)
class Lookup:
    """A question looked up in the answer cache: the answer stored for it, if any, and what a
    new answer is stored under."""

    vector: Vector
    query: str
    key: Hashable
    version: str
    found: Cached | None


Holder = Literal["model", "embedder"]
MODEL: Holder = "model"
EMBEDDER: Holder = "embedder"


@dataclass(frozen=True)
class Prepared:
    """A request on its way to its answer: condensed where that comes first, and its answer
    cache look-up once made."""

    request: AnswerRequest
    lookup: Lookup | None = None


@dataclass(frozen=True)
class Step:
    """One step before the answer: its name, what it holds while it runs (the model or the
    embedder), and what it does (blocking)."""

    name: str
    holds: Holder
    run: Callable[[Prepared], Prepared]


class AnswerService:
    """Answers requests on one application, in any number of threads: one answer at a time
    holds a model that must not run in two threads at once (llama.cpp in-process)."""

    def __init__(self, app: Application) -> None:
        self.app = app
        s = app.settings
        self.cache: AnswerCache[Cached] | None = (
            AnswerCache(s.answer_cache_size, s.answer_cache_ttl, s.answer_cache_threshold)
            if s.answer_cache_size > 0
            else None
        )
        self.model_lock: AbstractContextManager[Any] = (
            nullcontext() if app.generator_thread_safe else threading.Lock()
        )

    def run(self, request: AnswerRequest) -> Generator[AnswerEvent, None, None]:
        """The answer's events: `SourcesEvent` first, sentences as they are checked, `DoneEvent`
        last (blocking)."""
        prepared = Prepared(request)
        for step in self.steps(request):
            prepared = step.run(prepared)
        return self.answer(prepared.request, prepared.lookup)

    def steps(self, request: AnswerRequest) -> list[Step]:
        """The steps before the answer, in their order: a follow-up condensed where the answer
        cache keys on its standalone question, then the cache looked up; none where nothing is
        cached (no cache, or sources given)."""
        if not self._cached(request):
            return []
        condense = Step("condense", MODEL, lambda done: replace(done, request=self.condensed(done.request)))
        look_up = Step("look up", EMBEDDER, lambda done: replace(done, lookup=self.look_up(done.request)))
        return [condense, look_up] if request.history else [look_up]

    def ask(self, request: AnswerRequest) -> Answer:
        """The finished answer."""
        return final(self.run(request))

    def condensed(self, request: AnswerRequest) -> AnswerRequest:
        """The request with its follow-up condensed into a standalone question, counted under
        "condense" (blocking; holds the model)."""
        usage = TokenUsage()
        with self.model_lock:
            engine = self.engine(request)
            # the model that reads the question's language condenses it, as it will answer it
            language = engine.for_language(detect_language(request.question))
            standalone = language.condense(request.question, request.history, usage)
        return replace(request, standalone=standalone, condense_usage=usage)

    def look_up(self, request: AnswerRequest) -> Lookup | None:
        """The request looked up in the answer cache; None when it is not cached (no cache, or
        sources given). Blocking: embeds the query."""
        if self.cache is None or not self._cached(request):
            return None
        query = request.query
        vector, version = self.app.embedder.embed(query), self.app.index_version()
        # The key is what decides the answer besides the query: the conversation only through
        # the standalone question it was condensed to, and the client's instruction.
        generation = request.generation
        options = replace(
            request,
            question="",
            history=(),
            standalone=None,
            condense_usage=None,
            generation=replace(generation, deadline=None) if generation is not None else None,
        )
        key = repr(options)
        return Lookup(vector, query, key, version, self.cache.get(vector, query, key, version))

    def answer(
        self, request: AnswerRequest, lookup: Lookup | None = None
    ) -> Generator[AnswerEvent, None, None]:
        """The events of the answer `lookup` found, or of a new one (holding the model), stored
        under `lookup` once it is complete."""
        if lookup is not None and lookup.found is not None:
            yield from lookup.found
            return
        with self.model_lock:
            sources: SourcesEvent | None = None
            for event in self._answered(request):
                if isinstance(event, SourcesEvent):
                    sources = event
                elif isinstance(event, DoneEvent) and lookup is not None and sources is not None:
                    assert self.cache is not None
                    self.cache.put(lookup.vector, lookup.query, lookup.key, lookup.version, (sources, event))
                yield event

    def search(self, query: str, limit: int, source_filter: SourceFilter) -> list[SearchHit]:
        """The `limit` best hits for `query` that `source_filter` lets through, as an answer would
        retrieve them (blocking)."""
        app = self.app
        return FilteredRetriever(app.retriever(), source_filter).search(query, app.retrieval_params(limit))

    def generation(
        self,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        stop: tuple[str, ...] = (),
        seed: int | None = None,
        priority: int = 0,
        deadline: float | None = None,
    ) -> GenerationParams:
        """What a request's answer is generated with: what it asks, the settings' values for what
        it leaves out, and at most the cap on an answer's tokens, within half the context window."""
        s = self.app.settings
        cap = min(s.max_tokens_cap, s.context_tokens // 2 - 1)
        return GenerationParams(
            max_tokens=max(1, min(max_tokens or s.answer_tokens, cap)),
            temperature=s.temperature if temperature is None else temperature,
            top_p=1.0 if top_p is None else top_p,
            stop=stop,
            seed=s.seed if seed is None else seed,
            repeat_penalty=s.repeat_penalty,
            priority=priority,
            deadline=deadline,
        )

    def describe(self, hits: Sequence[SearchHit], snippet_chars: int = 0) -> DescribedSources:
        """The URIs and descriptions of an answer's sources (blocking: reads the catalog)."""
        return describe_sources(self.app, hits, snippet_chars)

    def engine(self, request: AnswerRequest) -> AnswerEngine:
        """The engine as the request asks: its depth, generation and related questions, searching
        within its source filter."""
        app = self.app
        retriever = FilteredRetriever(app.retriever(), request.source_filter)
        return app.answer_engine(
            request.related_questions, retriever=retriever, top_k=request.top_k, generation=request.generation
        )

    def _cached(self, request: AnswerRequest) -> bool:
        return self.cache is not None and request.sources is None

    def _answered(self, request: AnswerRequest) -> Iterator[AnswerEvent]:
        engine = self.engine(request)
        history = list(request.history)
        if request.sources is not None:
            return engine.stream_sources(
                request.question, request.sources, history or None, request.instruction
            )
        usage = copy.deepcopy(request.condense_usage) if request.condense_usage else TokenUsage()
        return engine.stream(
            request.question,
            history=history,
            instruction=request.instruction,
            standalone=request.standalone,
            usage=usage,
        )
