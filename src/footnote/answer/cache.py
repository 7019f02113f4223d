"""An answer cache for near-duplicate questions.

A question whose embedding has cosine similarity at least `threshold` with a cached
question (asked with the same options) gets that answer again, while it is younger than
`ttl` seconds and the index has not changed since. Entries are evicted least recently
used first beyond `size`. Vectors are L2-normalised, so the cosine is a dot product.

The threshold is calibrated with `benchmarks/answer_cache_threshold.py`: it embeds
SciFact claims and robustness variants of them (typos, dropped words, swapped words)
and prints the similarity of each variant to its claim and of each claim to its nearest
other claim; the default sits between the two distributions, nearer the distinct side
(a wrong cached answer costs more than a missed hit).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from footnote.store.catalog import Catalog

T = TypeVar("T")


def index_version(catalog: Catalog) -> str:
    """Changes whenever a document is added, replaced or removed, or chunks change."""
    digest = hashlib.blake2b(digest_size=12)
    for record in catalog.list_documents():
        digest.update(f"{record.id}:{record.content_hash}:{record.chunk_count};".encode())
    digest.update(str(catalog.count_chunks()).encode())
    return digest.hexdigest()


@dataclass
class _Entry(Generic[T]):
    vector: Sequence[float]
    key: Hashable
    value: T
    stored: float


class AnswerCache(Generic[T]):
    def __init__(
        self,
        size: int,
        ttl: float,
        threshold: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size = size
        self.ttl = ttl
        self.threshold = threshold
        self._clock = clock
        self._entries: OrderedDict[int, _Entry[T]] = OrderedDict()
        self._next_id = 0
        self._version: str | None = None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, vector: Sequence[float], key: Hashable, version: str) -> T | None:
        with self._lock:
            self._check_version(version)
            now = self._clock()
            best, best_score = None, self.threshold
            for entry_id, entry in list(self._entries.items()):
                if now - entry.stored > self.ttl:
                    del self._entries[entry_id]
                    continue
                if entry.key != key:
                    continue
                score = sum(a * b for a, b in zip(vector, entry.vector, strict=True))
                if score >= best_score:
                    best, best_score = entry_id, score
            if best is None:
                self.misses += 1
                return None
            self._entries.move_to_end(best)
            self.hits += 1
            return self._entries[best].value

    def put(self, vector: Sequence[float], key: Hashable, version: str, value: T) -> None:
        with self._lock:
            self._check_version(version)
            self._entries[self._next_id] = _Entry(list(vector), key, value, self._clock())
            self._next_id += 1
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def _check_version(self, version: str) -> None:
        if version != self._version:
            self._entries.clear()
            self._version = version
