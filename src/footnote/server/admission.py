"""Admission control: a few requests run, a bounded number wait, the rest get 429 at once.

Generation is slow CPU work, so letting every request in would only make all of them
slow and exhaust memory. A pool admits at most `limit` holders; up to `max_queue` more
wait in arrival order (each for at most `timeout` seconds); beyond that the request is
refused with a `Retry-After` estimated from how long recent holders kept their slot.
The books are the shared `Admission` (the backends' priority queues keep theirs there
too); this module adds the waiting on the event loop.

The pool lives on the event loop and is never touched from worker threads, so plain
counters suffice. Waiters are futures of the loop that is running when they wait, so
one pool serves any number of loops (each test client runs its own).
"""

from __future__ import annotations

import asyncio
import time

from footnote.errors import OverloadedError
from footnote.models.backends.admission import Admission


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
            self._pool._pass_on(time.monotonic() - self._since)


class AdmissionPool(Admission["asyncio.Future[None]"]):
    refusal = Overloaded

    def __init__(self, name: str, limit: int, max_queue: int, timeout: float) -> None:
        super().__init__(name, limit, max_queue)
        self.timeout = timeout

    async def acquire(self) -> Slot:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._admit(waiter):
            return Slot(self)
        try:
            await asyncio.wait_for(waiter, self.timeout)
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
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


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
