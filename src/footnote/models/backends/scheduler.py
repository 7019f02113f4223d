"""A per-backend priority queue: at most `max_concurrency` requests run, the rest wait by priority.

Waiters are served highest `priority` first, then in arrival order. The queue is bounded:
beyond `max_queue` waiters a request is refused at once with `BackendOverloaded` and a
retry estimate; a waiter whose deadline passes gives up with `BackendTimeout`. Callers
run in worker threads (generation is blocking), so a condition variable does the waking.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from footnote.models.backends.errors import BackendOverloaded, BackendTimeout


@dataclass(order=True)
class _Ticket:
    rank: int  # minus the priority, so the heap pops the most important first
    arrival: int
    granted: bool = field(default=False, compare=False)


class PriorityScheduler:
    def __init__(self, name: str, max_concurrency: int = 1, max_queue: int = 16) -> None:
        self.name = name
        self.max_concurrency = max_concurrency
        self.max_queue = max_queue
        self._condition = threading.Condition()
        self._active = 0
        self._waiting: list[_Ticket] = []
        self._arrivals = itertools.count()
        self._mean_hold = 1.0  # seconds; moving average of how long a request keeps its slot

    @property
    def active(self) -> int:
        return self._active

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def retry_after(self) -> int:
        rounds = (len(self._waiting) + 1) / self.max_concurrency
        return max(1, min(120, math.ceil(self._mean_hold * rounds)))

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
            if self._active < self.max_concurrency and not self._waiting:
                self._active += 1
                return
            if len(self._waiting) >= self.max_queue:
                raise BackendOverloaded(self.name, self.retry_after())
            ticket = _Ticket(-priority, next(self._arrivals))
            heapq.heappush(self._waiting, ticket)
            while not ticket.granted:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self._waiting.remove(ticket)
                    heapq.heapify(self._waiting)
                    raise BackendTimeout(f"{self.name}: the deadline passed while queued for a slot")
                self._condition.wait(remaining)

    def release(self, held: float | None = None) -> None:
        with self._condition:
            if held is not None:
                self._mean_hold = 0.8 * self._mean_hold + 0.2 * held
            if self._waiting:
                # The slot passes straight to the most important waiter: `_active` stays.
                heapq.heappop(self._waiting).granted = True
                self._condition.notify_all()
            else:
                self._active -= 1
