"""One seam where every call to a store is timed: a proxy around the catalog or the vector index.

The server hands in an observer that records each call's latency and whether it failed
(Prometheus histograms and counters); the core knows nothing of metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

StoreObserver = Callable[[str, str, float, bool], None]  # (store, operation, seconds, failed)
S = TypeVar("S")


class TimedStore:
    """Passes every public method call on to `store`, reporting it to `observe` as `name`."""

    def __init__(self, store: Any, name: str, observe: StoreObserver) -> None:
        self._store = store
        self._name = name
        self._observe = observe

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._store, attribute)
        if attribute.startswith("_") or not callable(value):
            return value

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            failed = True
            try:
                result = value(*args, **kwargs)
                failed = False
                return result
            finally:
                self._observe(self._name, attribute, time.perf_counter() - started, failed)

        return timed


def timed(store: S, name: str, observe: StoreObserver) -> S:
    """`store`, with each of its calls reported to `observe` (only: a timed store is unwrapped
    first); used where `store` would be."""
    return cast(S, TimedStore(untimed(store), name, observe))


def untimed(store: S) -> S:
    """The store itself, under any timing proxy."""
    return cast(S, store._store) if isinstance(store, TimedStore) else store
