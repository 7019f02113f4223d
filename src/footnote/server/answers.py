"""Running one answer off the event loop and handing its events to the request.

The answer engine is blocking CPU work: it runs in the server's generation thread pool,
holding the model lock, and passes the engine's own events (`AnswerEvent`) to the event
loop through a queue. The request consumes them as an async iterator, whether it streams
them or collects them; what the client is sent is made from them by the route. The
admission slot is released when the worker thread ends, not when the client goes away, so
the pool always counts what the model is really doing.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from footnote.answer.history import Standalone
from footnote.answer.result import Answer, AnswerEvent, DoneEvent, TokenEvent
from footnote.answer.usage import TokenUsage
from footnote.models.base import GenerationParams, Message
from footnote.server.admission import Slot
from footnote.server.errors import ApiError
from footnote.server.request_class import RequestClass
from footnote.server.sources import FilteredRetriever, SourceFilter
from footnote.server.state import ServerState


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    generation: GenerationParams
    top_k: int
    source_filter: SourceFilter = field(default_factory=SourceFilter)
    related_questions: bool = False
    # A conversation: the earlier user and assistant turns, and the client's own system message.
    history: tuple[Message, ...] = ()
    instruction: str = ""
    # The question condensed from the conversation, when that was done before the run
    # (the answer cache keys on it), with the tokens condensing took.
    standalone: Standalone | None = None
    condense_usage: TokenUsage | None = None
    # Decides the latency objective the request is admitted against and its place in the queue.
    request_class: RequestClass = "api"


def _run_answer(state: ServerState, request: AnswerRequest) -> Generator[AnswerEvent, None, None]:
    """The engine's events for the request (blocking; worker thread)."""
    app = state.models.generation()
    retriever = FilteredRetriever(app.retriever(), request.source_filter)
    engine = app.answer_engine(
        request.related_questions, retriever=retriever, top_k=request.top_k, generation=request.generation
    )
    usage = copy.deepcopy(request.condense_usage) if request.condense_usage else TokenUsage()
    yield from engine.stream(
        request.question,
        history=list(request.history),
        instruction=request.instruction,
        standalone=request.standalone,
        usage=usage,
    )


class AnswerRun:
    """One answer being generated in a worker thread; iterate `events()` on the event loop."""

    def __init__(self, state: ServerState, request: AnswerRequest, slot: Slot) -> None:
        self.state = state
        self.request = request
        self.slot = slot
        self.started = time.perf_counter()
        self._cancelled = threading.Event()
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        state.executor.submit(self._work)

    def cancel(self) -> None:
        self._cancelled.set()

    def _put(self, kind: str, item: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (kind, item))
        except RuntimeError:  # the loop is gone: nobody is listening any more
            self._cancelled.set()

    def _work(self) -> None:
        try:
            with self.state.models.generation_lock:
                events = _run_answer(self.state, self.request)
                try:
                    for event in events:
                        if self._cancelled.is_set():
                            break
                        self._put("event", event)
                finally:
                    events.close()  # stops the model mid-answer when the client has gone
            self._put("end", None)
        except BaseException as exc:
            self._put("error", exc)
        finally:
            self._release_slot()

    def _release_slot(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self.slot.release)
        except RuntimeError:  # the loop has closed, so nothing else can be using the pool
            self.slot.release()

    async def events(self) -> AsyncGenerator[AnswerEvent, None]:
        """The run's events until `DoneEvent`; raises what the engine raised, or 504 on timeout."""
        deadline = self.started + self.state.settings.request_timeout
        metrics = self.state.metrics
        first_token = True
        try:
            while True:
                remaining = deadline - time.perf_counter()
                try:
                    kind, item = await asyncio.wait_for(self._queue.get(), max(remaining, 0.001))
                except TimeoutError:
                    raise ApiError(
                        504, f"the answer took longer than {self.state.settings.request_timeout:g} s"
                    ) from None
                if kind == "error":
                    raise item
                if kind == "end":
                    return
                if isinstance(item, TokenEvent):
                    if first_token:
                        metrics.time_to_first_token.observe(time.perf_counter() - self.started)
                        first_token = False
                    metrics.tokens.inc()
                yield item
        finally:
            self.cancel()


async def start_answer(state: ServerState, request: AnswerRequest) -> AnswerRun:
    """Admit the request (429 when the generation pool is full or the wait would miss the
    request's objective) and start its run."""
    slot = await state.generation.acquire(request.request_class)
    try:
        return AnswerRun(state, request, slot)
    except BaseException:
        slot.release()
        raise


async def collect(run: AnswerRun) -> Answer:
    """Wait for the whole answer."""
    async with aclosing(run.events()) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return event.answer
    raise RuntimeError("the answer ended without a result")
