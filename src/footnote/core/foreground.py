"""Answers first: background work in the same process (a server ingesting uploads) waits at its
next step while an answer is being made, so that the answer runs at its quiet speed.

Ingest steps are short (one file parsed, a few batches of chunks embedded) and wait
`MOST_WAIT` seconds at most each, so a stream of answers slows an ingest but never stops it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MOST_WAIT = 5.0  # seconds one background step waits for answers at most


class Foreground:
    """How many answers are being made now, and a wait for there to be none."""

    def __init__(self) -> None:
        self._running = 0
        self._changed = threading.Condition()

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Hold background work back while the body runs."""
        with self._changed:
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def wait(self, most: float = MOST_WAIT) -> float:
        """Wait until no answer is being made, `most` seconds at most; the seconds waited."""
        started = time.monotonic()
        with self._changed:
            self._changed.wait_for(lambda: self._running == 0, timeout=most)
        return time.monotonic() - started


FOREGROUND = Foreground()
