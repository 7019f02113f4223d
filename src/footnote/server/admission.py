"""Admission control: a few requests run, a bounded number wait, the rest get 429 at once.

Generation is slow CPU work, so letting every request in would only make all of them
slow and exhaust memory. A pool admits at most `limit` holders; up to `max_queue` more
wait in arrival order (each for at most `timeout` seconds); beyond that the request is
refused with a `Retry-After` estimated from how long recent holders kept their slot.

The pool lives on the event loop and is never touched from worker threads, so plain
counters suffice. Waiters are futures of the loop that is running when they wait, so
one pool serves any number of loops (each test client runs its own).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from contextlib import suppress

from footnote.errors import OverloadedError


class Overloaded(OverloadedError):
    """No slot free and the queue is full (or the wait timed out)."""


class Slot:
    """One admitted request's hold on the pool; releasing twice is harmless."""

    def __init__(self, pool: AdmissionPool) -> None:
        self._pool = pool
        self._since = time.monotonic()
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._pool._release(time.monotonic() - self._since)


class AdmissionPool:
    def __init__(self, name: str, limit: int, max_queue: int, timeout: float) -> None:
        self.name = name
        self.limit = limit
        self.max_queue = max_queue
        self.timeout = timeout
        self._active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._mean_hold = 1.0  # seconds; an exponential moving average of slot hold times

    @property
    def active(self) -> int:
        return self._active

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def retry_after(self) -> int:
        """Seconds until a slot is likely free for a newcomer, from 1 to 120."""
        rounds = (self.waiting + 1) / self.limit
        return max(1, min(120, math.ceil(self._mean_hold * rounds)))

    async def acquire(self) -> Slot:
        if self._active < self.limit and not self._waiters:
            self._active += 1
            return Slot(self)
        if len(self._waiters) >= self.max_queue:
            raise Overloaded(self.name, self.retry_after())
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, self.timeout)
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                # The slot was handed over as we gave up: pass it on.
                self._release(None)
            else:
                with suppress(ValueError):
                    self._waiters.remove(waiter)
            if isinstance(exc, TimeoutError):
                raise Overloaded(self.name, self.retry_after()) from None
            raise
        return Slot(self)

    def _release(self, held: float | None) -> None:
        if held is not None:
            self._mean_hold = 0.8 * self._mean_hold + 0.2 * held
        while self._waiters:
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            # The slot passes straight to the next waiter: `_active` stays the same.
            loop = waiter.get_loop()
            if _running_loop() is loop:
                waiter.set_result(None)
            else:
                loop.call_soon_threadsafe(self._grant, waiter)
            return
        self._active -= 1

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # it gave up meanwhile: the slot goes to the next one
            self._release(None)
        else:
            waiter.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
