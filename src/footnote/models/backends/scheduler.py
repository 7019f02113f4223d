"""A per-backend priority queue: at most `max_concurrency` requests run, the rest wait by priority.

The books (who holds a slot, who waits in which order, the retry estimate) are the shared
`Admission`. Beyond `max_queue` waiters a request is refused at once with
`BackendOverloaded`; a waiter whose deadline passes gives up with `BackendTimeout`.
Callers run in worker threads (generation is blocking), so a condition variable does the
waking.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from footnote.models.backends.admission import Admission
from footnote.models.backends.errors import BackendOverloaded, BackendTimeout


class _Ticket:
    """A queued request; `granted` once a released slot has passed to it."""

    granted = False


class PriorityScheduler(Admission[_Ticket]):
    refusal = BackendOverloaded

    def __init__(self, name: str, max_concurrency: int = 1, max_queue: int = 16) -> None:
        super().__init__(name, max_concurrency, max_queue)
        self._condition = threading.Condition()

    @property
    def max_concurrency(self) -> int:
        return self.limit

    @contextmanager
    def slot(self, priority: int = 0, deadline: float | None = None) -> Iterator[None]:
        self.acquire(priority, deadline)
        since = time.monotonic()
        try:
            yield
        finally:
            self.release(time.monotonic() - since)

    def acquire(self, priority: int = 0, deadline: float | None = None) -> None:
        with self._condition:
            ticket = _Ticket()
            if self._admit(ticket, priority):
                return
            while not ticket.granted:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self._withdraw(ticket)
                    raise BackendTimeout(f"{self.name}: the deadline passed while queued for a slot")
                self._condition.wait(remaining)

    def release(self, held: float | None = None) -> None:
        with self._condition:
            ticket = self._release(held)
            if ticket is not None:
                ticket.granted = True
                self._condition.notify_all()
