"""Admission control: a few requests run, a bounded number wait, the rest get 429 at once.

Generation is slow CPU work, so letting every request in would only make all of them
slow and exhaust memory. A pool admits at most `limit` holders; up to `max_queue` more
wait (each for at most `timeout` seconds); beyond that the request is refused with a
`Retry-After` estimated from how long recent holders kept their slot. The books are the
shared `Admission` (the backends' priority queues keep theirs there too); this module adds
the waiting on the event loop.

The generation pool (`DeadlinePool`) also refuses what it cannot finish in time: each
request class has a latency objective, and a newcomer is admitted only when the wait it
would face plus its own service time fits in its objective. The wait is estimated from the
last service times measured: each running answer has left the mean excess of the recent
service times longer than it has run so far (an answer past the quick ones is likely a
long one), and each waiter ahead of the newcomer takes the mean. The admission decision counts
the running answers' rest and the newcomer's own time at the 90th percentile instead, since the
objective bounds the slow answers, not the typical one. The rest is refused at
once, before any work is done for it, with the estimated wait as `Retry-After`. Waiters
are served earliest deadline (arrival plus objective) first: an interactive request goes
before a batch one that came a little earlier, yet a batch request that has waited long
enough is ahead of every newcomer, so it is never starved. When the queue is full, a
newcomer with an earlier deadline than the last waiter's takes that waiter's place, and
the waiter is refused.

The pool lives on the event loop and is never touched from worker threads, so plain
counters suffice. Waiters are futures of the loop that is running when they wait, so
one pool serves any number of loops (each test client runs its own).
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from statistics import fmean

from footnote.errors import OverloadedError
from footnote.models.backends.admission import Admission
from footnote.server.request_class import RequestClass

Clock = Callable[[], float]
RECENT_HOLDS = 20  # service times the generation pool's estimates are made from
# Admission counts the newcomer's own service time and the running answers' rest at this
# quantile of the recent service times. Counted at their mean, the admitted API answers' p99
# at 1 request/s offered was 3.4 s against their 2.5 s objective (docs/benchmarks.md,
# "Answers under load, and many replicas").
SLOW_QUANTILE = 0.9


class Overloaded(OverloadedError):
    """No slot free and the queue is full, the wait timed out, or the wait would miss the
    request's latency objective."""

    def __init__(self, pool: str, retry_after: int, reason: str = "") -> None:
        super().__init__(pool, retry_after)
        if reason:
            self.args = (f"the server is busy ({pool}): {reason}; retry after {retry_after} s",)


class Slot:
    """One admitted request's hold on the pool; releasing twice is harmless."""

    def __init__(self, pool: AdmissionPool) -> None:
        self._pool = pool
        self.since = pool.clock()
        self._released = False
        pool._holders.add(self)

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._pool._holders.discard(self)
            self._pool._pass_on(self._pool.clock() - self.since)


class AdmissionPool(Admission["asyncio.Future[None]"]):
    refusal = Overloaded

    def __init__(
        self, name: str, limit: int, max_queue: int, timeout: float, clock: Clock = time.monotonic
    ) -> None:
        super().__init__(name, limit, max_queue)
        self.timeout = timeout
        self.clock = clock
        self._holders: set[Slot] = set()

    async def acquire(self) -> Slot:
        """A slot, now or after waiting in arrival order; `Overloaded` when the queue is full
        or the wait times out."""
        return await self._wait_for_slot(0)

    async def _wait_for_slot(self, priority: float) -> Slot:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._admit(waiter, priority):
            return Slot(self)
        try:
            await asyncio.wait_for(waiter, self.timeout)
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                # The slot was handed over as we gave up: pass it on.
                self._pass_on(None)
            else:
                self._withdraw(waiter)
            if isinstance(exc, TimeoutError):
                raise Overloaded(self.name, self.retry_after()) from None
            raise
        return Slot(self)

    def _pass_on(self, held: float | None) -> None:
        """A holder is done: its slot passes to the next waiter still waiting, or is freed."""
        waiter = self._release(held)
        while waiter is not None and waiter.done():
            waiter = self._release(None)
        if waiter is None:
            return
        # The slot passes straight to the next waiter: `active` stays the same.
        loop = waiter.get_loop()
        if _running_loop() is loop:
            waiter.set_result(None)
        else:
            loop.call_soon_threadsafe(self._grant, waiter)

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # it gave up meanwhile: the slot goes to the next one
            self._pass_on(None)
        else:
            waiter.set_result(None)


class DeadlinePool(AdmissionPool):
    """The generation pool: admits a request only when it can finish within its class's
    latency objective, and serves the earliest deadline first."""

    def __init__(
        self,
        name: str,
        limit: int,
        max_queue: int,
        timeout: float,
        objectives: Mapping[RequestClass, float],
        clock: Clock = time.monotonic,
    ) -> None:
        super().__init__(name, limit, max_queue, timeout, clock)
        self.objectives = dict(objectives)
        self.rejected: dict[RequestClass, int] = dict.fromkeys(self.objectives, 0)
        self.waiting_by_class: dict[RequestClass, int] = dict.fromkeys(self.objectives, 0)
        self._recent: deque[float] = deque(maxlen=RECENT_HOLDS)

    @property
    def service_time(self) -> float:
        """Seconds a request holds a slot: the mean of the recent holds (one second before any)."""
        recent = tuple(self._recent)  # a copy: /metrics reads it from a worker thread
        return fmean(recent) if recent else self._mean_hold

    @property
    def slow_service_time(self) -> float:
        """Seconds a slow answer holds a slot: the SLOW_QUANTILE of the recent holds (the
        one-second guess before any)."""
        recent = tuple(self._recent)
        return _slow(recent) if recent else self._mean_hold

    def estimated_wait(self, request_class: RequestClass) -> float:
        """Seconds a newcomer of `request_class` would wait for a slot now."""
        return self._wait_before(self.clock() + self.objectives[request_class])

    def check(self, request_class: RequestClass) -> float:
        """The deadline of a newcomer of `request_class`, or `Overloaded` (counted) when it
        would not finish within its objective. Does nothing else: call it before any work."""
        objective = self.objectives[request_class]
        deadline = self.clock() + objective
        wait, service = self._wait_before(deadline, slow=True), self.slow_service_time
        # An idle pool admits anything: a refusal there would only leave the slot unused.
        idle = self._active < self.limit and not self._queue
        if not idle and wait + service > objective:
            self.rejected[request_class] += 1
            reason = (
                f"a {request_class} request would wait about {wait:.1f} s and take about "
                f"{service:.1f} s, past its {objective:g} s objective"
            )
            raise Overloaded(self.name, max(1, math.ceil(wait)), reason)
        return deadline

    async def acquire(self, request_class: RequestClass = "api") -> Slot:
        """A slot for a request of `request_class`, or `Overloaded` (counted) at once when it
        would miss its objective, later when its wait times out."""
        deadline = self.check(request_class)
        self.waiting_by_class[request_class] += 1
        try:
            return await self._wait_for_slot(-deadline)  # the earliest deadline is served first
        except Overloaded:
            self.rejected[request_class] += 1
            raise
        finally:
            self.waiting_by_class[request_class] -= 1

    def _make_room(self, priority: float) -> bool:
        """A full queue makes room for a newcomer whose deadline is earlier than its last
        waiter's: that waiter is refused (it has done no work) and the newcomer takes its place."""
        if not self._queue:
            return False
        last = max(self._queue)  # the latest deadline; among equal ones, the latest arrival
        if last.rank <= -priority:
            return False
        self._withdraw(last.waiter)
        reason = "a request with an earlier deadline took its place in the full queue"
        refusal = Overloaded(self.name, self.retry_after(), reason)
        loop = last.waiter.get_loop()
        if _running_loop() is loop:
            _refuse(last.waiter, refusal)
        else:
            loop.call_soon_threadsafe(_refuse, last.waiter, refusal)
        return True

    def _wait_before(self, deadline: float, slow: bool = False) -> float:
        """How long until a slot is free for a request with `deadline`: every holder finishes
        (its expected remaining time; with `slow`, what the slow answers that ran as long had
        left) and every waiter with an earlier or equal deadline is served first (the mean
        service time each), on the slot that frees up first."""
        if self._active < self.limit and not self._queue:
            return 0.0
        # Copies: /metrics reads this from a worker thread while the loop may change the books.
        holders, queue, active = tuple(self._holders), tuple(self._queue), self._active
        now, mean = self.clock(), self.service_time
        free = [self._remaining(now - slot.since, slow) for slot in holders]
        free += [mean] * max(active - len(free), 0)  # handed over, not started yet
        free += [0.0] * max(self.limit - active, 0)
        heapq.heapify(free)
        for place in queue:
            if place.rank <= deadline:
                heapq.heapreplace(free, free[0] + mean)
        return free[0]

    def _remaining(self, elapsed: float, slow: bool = False) -> float:
        """The expected rest of an answer that has run `elapsed` seconds: the mean excess of the
        recent service times longer than that (with `slow`, their SLOW_QUANTILE). One longer
        than all of them is counted as about to finish; before any was measured, the one-second
        guess counts down."""
        recent = tuple(self._recent)
        if not recent:
            return max(self._mean_hold - elapsed, 0.0)
        longer = [held - elapsed for held in recent if held > elapsed]
        if not longer:
            return 0.0
        return _slow(longer) if slow else fmean(longer)

    def _release(self, held: float | None) -> asyncio.Future[None] | None:
        if held is not None:
            self._recent.append(held)
        return super()._release(held)


def _slow(seconds: Sequence[float]) -> float:
    """The SLOW_QUANTILE of `seconds` (nearest rank)."""
    ordered = sorted(seconds)
    return ordered[max(math.ceil(SLOW_QUANTILE * len(ordered)) - 1, 0)]


def _refuse(waiter: asyncio.Future[None], refusal: Overloaded) -> None:
    if not waiter.done():  # a waiter that gave up meanwhile needs no answer
        waiter.set_exception(refusal)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
