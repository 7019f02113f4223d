"""An answer cache for near-duplicate questions.

A question whose embedding has cosine similarity at least `threshold` with a cached
question (asked with the same options) gets that answer again, while it is younger than
`ttl` seconds and the index has not changed since. Entries are evicted least recently
used first beyond `size`. Vectors are L2-normalised, so the cosine is a dot product.

The threshold is calibrated with `benchmarks/answer_cache_threshold.py` (retired): it embeds
SciFact claims and robustness variants of them (typos, dropped words, swapped words)
and prints the similarity of each variant to its claim and of each claim to its nearest
other claim. On 300 claims with the bundled MiniLM, the nearest distinct claim exceeds 0.95
for 11 % of claims (mostly opposites: "increases" against "decreases"), so no threshold
alone is safe; with the lexical guard below, 0.9 serves 84 % of typo and swap variants
while 0.7 % of distinct claims would share an answer (results in benchmarks/results/).

Embeddings alone cannot tell "X increases Y" from "X reduces Y" (cosine above 0.99 on
SciFact), so a hit must also pass a lexical guard: every word that differs between the
two questions must be a typo (one edit or one transposition) of a word in the other.
Reordered words, case, punctuation and typos still hit; a changed, added or dropped word
(which may be a "not") does not.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from footnote.core.loops import lowered_words
from footnote.store.catalog import Catalog

T = TypeVar("T")


def _one_edit(a: str, b: str) -> bool:
    """Are `a` and `b` one insertion, deletion, substitution or adjacent transposition apart?"""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def same_words(first: str, second: str) -> bool:
    """Do two questions use the same words, up to order, case and one-edit typos?"""
    a, b = set(lowered_words(first)), set(lowered_words(second))
    only_a, only_b = a - b, b - a
    if len(only_a) != len(only_b):
        return False
    return all(any(_one_edit(x, y) for y in only_b) for x in only_a) and all(
        any(_one_edit(y, x) for x in only_a) for y in only_b
    )


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
    text: str
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

    def get(self, vector: Sequence[float], text: str, key: Hashable, version: str) -> T | None:
        with self._lock:
            self._check_version(version)
            now = self._clock()
            best, best_score = None, self.threshold
            for entry_id, entry in list(self._entries.items()):
                if now - entry.stored > self.ttl:
                    del self._entries[entry_id]
                    continue
                if entry.key != key or not same_words(text, entry.text):
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

    def put(self, vector: Sequence[float], text: str, key: Hashable, version: str, value: T) -> None:
        with self._lock:
            self._check_version(version)
            self._entries[self._next_id] = _Entry(list(vector), text, key, value, self._clock())
            self._next_id += 1
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def _check_version(self, version: str) -> None:
        if version != self._version:
            self._entries.clear()
            self._version = version
