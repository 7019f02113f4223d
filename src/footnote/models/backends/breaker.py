"""A circuit breaker, so a backend that keeps failing is left alone for a while.

Closed: requests pass. After `failure_threshold` consecutive failures it opens: requests
skip the backend for `reset_after` seconds. Then one trial request is let through
(half-open): success closes the circuit, failure opens it for another period.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

CircuitState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(
        self,
        failure_threshold: int = 3,
        reset_after: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.reset_after = reset_after
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at = 0.0
        self._state: CircuitState = "closed"

    @property
    def state(self) -> CircuitState:
        with self._lock:
            if self._state == "open" and self._clock() - self._opened_at >= self.reset_after:
                return "half_open"
            return self._state

    def allow(self) -> bool:
        """May a request go to the backend now? In half-open state only one trial may."""
        with self._lock:
            if self._state == "closed":
                return True
            if self._state == "open" and self._clock() - self._opened_at >= self.reset_after:
                self._state = "half_open"  # this caller is the trial
                return True
            return False

    def success(self) -> None:
        with self._lock:
            self._failures = 0
            self._state = "closed"

    def failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._state == "half_open" or self._failures >= self.failure_threshold:
                self._state = "open"
                self._opened_at = self._clock()
