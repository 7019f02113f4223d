"""Admission: at most `limit` holders of a slot, a bounded queue of waiters, a retry estimate.

Both queues of footnote are this one: a backend's priority queue (`PriorityScheduler`,
blocking worker threads) and the server's pools (`server.admission.AdmissionPool`, on the
event loop). This class keeps the books; each user supplies how a waiter waits (a
condition variable, a future) and what a refusal is.

- A newcomer takes a free slot only when no one is waiting, so the queue is never jumped.
- Waiters are served highest `priority` first, then in arrival order. A priority may be any
  number: the server's generation pool passes minus each request's deadline, which serves
  the earliest deadline first.
- Beyond `max_queue` waiters a newcomer is refused at once with an `OverloadedError`
  whose `retry_after` is estimated from how long recent holders kept their slot, unless
  the user makes room for it (`_make_room`: the server's generation pool refuses its
  least urgent waiter in favour of a more urgent newcomer).
- A released slot passes straight to the next waiter: the number of holders stays.

It takes no lock: the scheduler calls it under its condition's lock, the pool from its
event loop.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from footnote.errors import OverloadedError

W = TypeVar("W")


@dataclass(order=True)
class _Place(Generic[W]):
    rank: float  # minus the priority, so the heap pops the most important first
    arrival: int
    waiter: W = field(compare=False)


class Admission(Generic[W]):
    refusal: type[OverloadedError] = OverloadedError

    def __init__(self, name: str, limit: int, max_queue: int) -> None:
        self.name = name
        self.limit = limit
        self.max_queue = max_queue
        self._active = 0
        self._queue: list[_Place[W]] = []
        self._arrivals = itertools.count()
        self._mean_hold = 1.0  # seconds; an exponential moving average of how long a slot is held

    @property
    def active(self) -> int:
        """Requests holding a slot."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests queued for a slot."""
        return len(self._queue)

    @property
    def service_time(self) -> float:
        """Seconds a request is expected to hold its slot."""
        return self._mean_hold

    def retry_after(self) -> int:
        """Seconds until a slot is likely free for a newcomer, from 1 to 120."""
        rounds = (self.waiting + 1) / self.limit
        return max(1, min(120, math.ceil(self.service_time * rounds)))

    def _admit(self, waiter: W, priority: float = 0) -> bool:
        """True: `waiter` holds a slot now. False: it is queued and waits to be handed one.

        Raises `refusal` when the queue is full."""
        if self._active < self.limit and not self._queue:
            self._active += 1
            return True
        if len(self._queue) >= self.max_queue and not self._make_room(priority):
            raise self.refusal(self.name, self.retry_after())
        heapq.heappush(self._queue, _Place(-priority, next(self._arrivals), waiter))
        return False

    def _make_room(self, priority: float) -> bool:
        """The queue is full: True when a place was freed for a newcomer of `priority`."""
        return False

    def _withdraw(self, waiter: W) -> None:
        """`waiter` gave up before it was handed a slot."""
        self._queue = [place for place in self._queue if place.waiter is not waiter]
        heapq.heapify(self._queue)

    def _release(self, held: float | None) -> W | None:
        """A holder is done (after `held` seconds): the waiter its slot passes to, or None (freed)."""
        if held is not None:
            self._mean_hold = 0.8 * self._mean_hold + 0.2 * held
        if self._queue:
            return heapq.heappop(self._queue).waiter  # `_active` stays: the slot is handed over
        self._active -= 1
        return None
