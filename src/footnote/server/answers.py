"""Running one answer off the event loop and handing its events to the request.

The application's answer service is blocking work: its steps run in threads, each admitted by
the pool of what it holds (the model: a generation slot; the embedder: the work pool), and the
answer's own events (`AnswerEvent`) are passed to the event loop through a queue. The request
consumes them as an async iterator, whether it streams them or collects them; what the client is
sent is made from them by the route. The generation slot is released when the worker thread
ends, not when the client goes away, so the pool always counts what the model is really doing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from contextlib import aclosing
from functools import partial
from typing import Any

import anyio

from footnote.answer.result import Answer, AnswerEvent, DoneEvent, TokenEvent
from footnote.application.answers import MODEL, AnswerRequest, Lookup, Prepared, Step
from footnote.server.admission import Slot
from footnote.server.errors import ApiError
from footnote.server.request_class import RequestClass
from footnote.server.state import ServerState


class AnswerRun:
    """One answer being generated in a worker thread; iterate `events()` on the event loop."""

    def __init__(
        self, state: ServerState, slot: Slot, answer: Callable[[], Generator[AnswerEvent, None, None]]
    ) -> None:
        self.state = state
        self.slot = slot
        self.started = time.perf_counter()
        self._answer = answer
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
            self.state.models.generation()
            events = self._answer()
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
        """The run's events until `DoneEvent`; raises what the answer raised, or 504 on timeout."""
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


class StoredRun(AnswerRun):
    """An answer found in the cache, told as a run's events: no worker, no slot."""

    def __init__(self, events: Sequence[AnswerEvent]) -> None:
        self._stored = events

    def cancel(self) -> None:
        pass

    async def events(self) -> AsyncGenerator[AnswerEvent, None]:
        for event in self._stored:
            yield event


async def start_answer(
    state: ServerState, request: AnswerRequest, request_class: RequestClass = "api"
) -> AnswerRun:
    """Admit the request (429 when the generation pool is full or the wait would miss the
    request's objective) and start its run; an answer found in the cache takes no slot."""
    service = state.application.answers
    steps = service.steps(request)
    if not steps:
        return await _generating(state, request, None, request_class)
    # Refused before the question is embedded: a request turned away costs nothing.
    state.generation.check(request_class)
    holds_model = any(step.holds == MODEL for step in steps)
    slot = await state.generation.acquire(request_class) if holds_model else None
    prepared = Prepared(request)
    try:
        for step in steps:
            prepared = await _run_step(state, step, prepared)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    request, lookup = prepared.request, prepared.lookup
    if lookup is not None and lookup.found is not None:
        if slot is not None:
            slot.release()
        return StoredRun(list(service.answer(request, lookup)))
    return await _generating(state, request, lookup, request_class, slot)


async def _generating(
    state: ServerState,
    request: AnswerRequest,
    lookup: Lookup | None,
    request_class: RequestClass,
    slot: Slot | None = None,
) -> AnswerRun:
    slot = slot or await state.generation.acquire(request_class)
    try:
        return AnswerRun(state, slot, partial(state.application.answers.answer, request, lookup))
    except BaseException:
        slot.release()
        raise


async def _run_step(state: ServerState, step: Step, prepared: Prepared) -> Prepared:
    """`step` run with what it holds loaded: a step that holds the model on a thread of its own,
    under the slot taken for it; the others on the work pool."""
    if step.holds == MODEL:
        return await anyio.to_thread.run_sync(_loaded, state.models.generation, step, prepared)
    return await state.run_work(_loaded, state.models.retrieval, step, prepared)


def _loaded(load: Callable[[], object], step: Step, prepared: Prepared) -> Prepared:
    """`step` run once `load` has what it holds in memory."""
    load()
    return step.run(prepared)


async def collect(run: AnswerRun) -> Answer:
    """Wait for the whole answer."""
    async with aclosing(run.events()) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return event.answer
    raise RuntimeError("the answer ended without a result")
