"""Work done ahead on a background thread: each item made while the caller uses the one before.

Ingest parses the next files while the current window is embedded. The queue between the two is
bounded, so parsing runs at most `depth` items ahead; the worker waits for answers being made
(`FOREGROUND`) before each item, and an error it meets is raised in the caller, in order.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from footnote.core.foreground import FOREGROUND

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass
class _Failure:
    error: BaseException


def ahead(items: Sequence[In], make: Callable[[In], Out], depth: int, name: str) -> Iterator[Out]:
    """`make` of each of `items`, in order, made on a background thread (named `name`) at most
    `depth` ahead."""
    results: queue.Queue[Out | _Failure | _End] = queue.Queue(depth)
    stop = threading.Event()

    def put(item: Out | _Failure | _End) -> None:
        while not stop.is_set():
            try:
                results.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def work() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                FOREGROUND.wait()
                put(make(item))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(_Failure(exc))
        finally:
            put(_END)

    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    try:
        while not isinstance(made := results.get(), _End):
            if isinstance(made, _Failure):
                raise made.error
            yield made
    finally:
        stop.set()
        worker.join()


class _End:
    """The worker's last item: nothing follows."""


_END = _End()
