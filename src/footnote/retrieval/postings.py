"""BM25 over the catalog's keyword index, answered from postings held in memory.

FTS5 ranks a query by computing bm25() for every row that matches any of its terms; on
a large index with common query words that is hundreds of thousands of rows per query.
This index keeps, per term, numpy arrays of (row, weighted term frequency) so a query
costs a few vectorised operations per term. It scores exactly as FTS5's bm25() does
(same tokenizer, column weights, k1 = 1.2, b = 0.75, idf floor), so the two are
interchangeable; FTS5 stays the source of truth and answers filtered searches.

The index follows the catalog: on every search it compares the catalog's chunk
generation with the one it was built at, and applies only the difference (chunks
added are tokenized by FTS5 itself in a private in-memory table; chunks removed are
masked out, and the arrays are rebuilt once a quarter of their rows are dead).
"""

from __future__ import annotations

import logging
import math
import os
import re
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from footnote.errors import StoreError
from footnote.retrieval.keyword import GRAMS_COLUMN
from footnote.store.catalog import Catalog
from footnote.store.migrations import KEYWORD_TOKENIZER
from footnote.store.records import BM25_COLUMN_WEIGHTS

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
_COLUMNS = ("text", "heading", "title", GRAMS_COLUMN)
_BATCH = 2000
_REBUILD_DEAD_FRACTION = 0.25
_MAX_SEGMENTS = 8
POSTINGS_FORMAT = 2  # 2: Chinese grams are words (catalog migration 4)
SAVE_AFTER_ROWS = 1000  # rows added or removed since the last save that make another one worth it
# unicode61 keeps letters, numbers, private-use characters and every character beyond the
# Basic Multilingual Plane (emoji included) together, and splits at everything else.
_WORD = re.compile("(?:[^\\W_]|[\ue000-\uf8ff\U00010000-\U0010ffff])+")

Slots = npt.NDArray[np.int32]
Weights = npt.NDArray[np.float64]
# Weighted term frequencies: counts times column weights (1.0, 0.5), exact in float32.
Frequencies = npt.NDArray[np.float32]


class Fts5Tokenizer:
    """Terms of text exactly as the keyword index makes them.

    Text is split at the characters unicode61 treats as separators (anything but letters
    and numbers); each distinct raw word is then passed once through FTS5 itself, in a
    private in-memory table with the index's tokenizer, for case folding, diacritics and
    the Porter stem. Those are cached, so a word costs a dictionary look-up after its first.
    """

    def __init__(self, cache_limit: int = 2_000_000) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(f"CREATE VIRTUAL TABLE staged USING fts5(word, tokenize = '{KEYWORD_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE instances USING fts5vocab(staged, instance)")
        self._terms: dict[str, tuple[str, ...]] = {}
        self._cache_limit = cache_limit
        self._lock = threading.Lock()

    def terms(self, texts: Sequence[str]) -> list[list[str]]:
        """The index terms of each of `texts`, in order."""
        words = [_WORD.findall(text) for text in texts]
        with self._lock:
            unknown = {word for split in words for word in split if word not in self._terms}
            if unknown:
                self._learn(sorted(unknown))
            known = self._terms
            return [[term for word in split for term in known[word]] for split in words]

    def _learn(self, words: list[str]) -> None:
        if len(self._terms) + len(words) > self._cache_limit:
            self._terms.clear()
        found: dict[int, list[str]] = defaultdict(list)
        self._db.execute("BEGIN")
        try:
            self._db.executemany("INSERT INTO staged (rowid, word) VALUES (?, ?)", enumerate(words, start=1))
            for term, row in self._db.execute("SELECT term, doc FROM instances ORDER BY doc, offset"):
                found[row].append(term)
        finally:
            self._db.execute("ROLLBACK")
        for number, word in enumerate(words, start=1):
            self._terms[word] = tuple(found.get(number, ()))


class MemoryKeywordIndex:
    """The catalog's keyword index as in-memory postings, scored like FTS5's bm25()."""

    def __init__(self, catalog: Catalog, path: Path | None = None) -> None:
        """With `path`, the postings are saved there after each catch-up that changed many
        rows and loaded from there on the first one, so a restart re-reads only the difference."""
        self.catalog = catalog
        self.path = path
        self._unsaved = 0
        self._tokenizer = Fts5Tokenizer()
        self._weights = dict(zip(_COLUMNS, BM25_COLUMN_WEIGHTS, strict=True))
        self._lock = threading.Lock()  # held while the postings change
        self._state_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._syncing = False
        self._generation: int | None = None
        self._reset()

    def _reset(self) -> None:
        self._ids: npt.NDArray[np.int64] = np.empty(0, np.int64)
        self._lengths: Weights = np.empty(0, np.float64)
        self._alive: npt.NDArray[np.bool_] = np.empty(0, np.bool_)
        self._slot_of: dict[int, int] = {}
        self._postings: dict[str, list[tuple[Slots, Frequencies]]] = {}
        self._dead = 0
        self._rows = 0
        self._average_length = 0.0

    # --- following the catalog -------------------------------------------------------------

    @property
    def generation(self) -> int | None:
        """The catalog generation the postings are up to date with (None before the first sync)."""
        return self._generation

    def catch_up(self) -> None:
        """Start bringing the index in line with the catalog on a background thread."""
        with self._state_lock:
            if self._worker is not None and self._worker.is_alive():
                return
            self._worker = threading.Thread(
                target=self._sync_in_background, name="footnote-keyword-index", daemon=True
            )
            self._worker.start()

    def _sync_in_background(self) -> None:
        try:
            self.sync()
        except (sqlite3.Error, StoreError) as exc:  # the catalog closed or failed: FTS5 keeps answering
            log.warning("keyword postings not brought up to date: %s", exc)

    def sync(self) -> None:
        """Bring the index in line with the catalog now, if chunks were added or removed since."""
        with self._lock:
            generation = self.catalog.generation()
            if generation == self._generation:
                return
            self._syncing = True
            try:
                self._sync(generation)
            finally:
                self._syncing = False

    def _sync(self, generation: int) -> None:
        if self._generation is None and self.path is not None and self.path.exists():
            self._load(self.path)
        # A catalog with a change log says what changed; otherwise every chunk id is compared.
        changes = self.catalog.changes_since(self._generation) if self._generation is not None else None
        if changes is not None:
            gone_ids: list[int] = [i for i in changes.removed if i in self._slot_of]
            current: list[int] | None = None
        else:
            current = self.catalog.chunk_id_list()
            present = set(current)
            gone_ids = [chunk_id for chunk_id in self._slot_of if chunk_id not in present]
        gone = [self._slot_of[chunk_id] for chunk_id in gone_ids]
        if self._dead + len(gone) > _REBUILD_DEAD_FRACTION * max(len(self._ids), 1):
            self._reset()
            current = current if current is not None else self.catalog.chunk_id_list()
        else:
            for chunk_id in gone_ids:
                del self._slot_of[chunk_id]
            self._alive[gone] = False
            self._dead += len(gone)
        candidates = current if current is not None else changes.added if changes is not None else ()
        added = [chunk_id for chunk_id in candidates if chunk_id not in self._slot_of]
        self._unsaved += len(added) + len(gone)
        for start in range(0, len(added), _BATCH):
            self._add(self.catalog.keyword_rows(added[start : start + _BATCH]))
        for key, segments in self._postings.items():
            if len(segments) > 1:
                self._postings[key] = [_merged(segments)]
        self._rows = int(self._alive.sum())
        self._average_length = float(self._lengths[self._alive].sum()) / max(self._rows, 1)
        self._generation = generation
        if self.path is not None and self._unsaved >= SAVE_AFTER_ROWS:
            self._save(self.path)

    # --- on disk ---------------------------------------------------------------------------

    def _save(self, path: Path) -> None:
        """Write the postings (atomically: a crash leaves the old file or none)."""
        terms = list(self._postings)
        merged = [
            self._postings[t][0] if len(self._postings[t]) == 1 else _merged(self._postings[t]) for t in terms
        ]
        sizes = np.fromiter((len(slots) for slots, _ in merged), np.int64, len(merged))
        partial = path.with_name(path.name + ".partial")
        with partial.open("wb") as out:
            np.savez(
                out,
                version=np.array([POSTINGS_FORMAT]),
                terms=np.frombuffer("\n".join(terms).encode("utf-8"), np.uint8),
                sizes=sizes,
                slots=np.concatenate([s for s, _ in merged]) if merged else np.empty(0, np.int32),
                frequencies=np.concatenate([f for _, f in merged]) if merged else np.empty(0, np.float32),
                ids=self._ids,
                lengths=self._lengths,
                alive=self._alive,
            )
        os.replace(partial, path)
        self._unsaved = 0

    def _load(self, path: Path) -> None:
        """Start from saved postings; an unreadable file is ignored (the postings are rebuilt)."""
        try:
            with np.load(path) as saved:
                if int(saved["version"][0]) != POSTINGS_FORMAT:
                    return
                terms = bytes(saved["terms"]).decode("utf-8").split("\n") if len(saved["terms"]) else []
                bounds = np.cumsum(saved["sizes"])[:-1]
                slots = np.split(saved["slots"].astype(np.int32), bounds)
                frequencies = np.split(saved["frequencies"].astype(np.float32), bounds)
                ids, lengths, alive = saved["ids"], saved["lengths"], saved["alive"].astype(np.bool_)
        except (OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
            log.warning("saved keyword postings %s unreadable (%s); rebuilding them", path, exc)
            return
        if len(terms) != len(slots) or not len(ids) == len(lengths) == len(alive):
            return
        self._reset()
        self._postings = {term: [(s, f)] for term, s, f in zip(terms, slots, frequencies, strict=True)}
        self._ids, self._lengths, self._alive = ids.astype(np.int64), lengths.astype(np.float64), alive
        self._slot_of = {int(chunk_id): slot for slot, chunk_id in enumerate(ids.tolist()) if alive[slot]}
        self._dead = int(len(alive) - alive.sum())

    def _add(self, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
        first = len(self._ids)
        keys: dict[str, int] = {}
        term_numbers: list[int] = []
        slots: list[npt.NDArray[np.int64]] = []
        weights: list[Weights] = []
        lengths = np.zeros(len(rows), np.float64)
        for index, column in enumerate(_COLUMNS):
            grams = column == GRAMS_COLUMN
            split = self._tokenizer.terms([row[1:][index] for row in rows])
            counts = np.fromiter((len(terms) for terms in split), np.int64, len(split))
            lengths += counts
            term_numbers.extend(keys.setdefault(_key(grams, t), len(keys)) for terms in split for t in terms)
            slots.append(np.repeat(np.arange(len(rows), dtype=np.int64), counts))
            weights.append(np.full(int(counts.sum()), self._weights[column]))
        # One posting per (term, row): its occurrences summed with their columns' weights.
        pair = np.asarray(term_numbers, np.int64) * len(rows) + np.concatenate(slots)
        pairs, inverse = np.unique(pair, return_inverse=True)
        summed = np.bincount(inverse, np.concatenate(weights), len(pairs))
        numbers, row_of = np.divmod(pairs, len(rows))
        bounds = np.flatnonzero(np.diff(numbers)) + 1
        names = list(keys)
        for number, row_slots, row_weights in zip(
            numbers[np.concatenate([[0], bounds])] if len(pairs) else [],
            np.split((row_of + first).astype(np.int32), bounds),
            np.split(summed, bounds),
            strict=False,
        ):
            segments = self._postings.setdefault(names[number], [])
            segments.append((np.asarray(row_slots, np.int32), np.asarray(row_weights, np.float32)))
            if len(segments) > _MAX_SEGMENTS:
                self._postings[names[number]] = [_merged(segments)]
        self._ids = np.concatenate([self._ids, np.fromiter((row[0] for row in rows), np.int64, len(rows))])
        self._lengths = np.concatenate([self._lengths, lengths])
        self._alive = np.concatenate([self._alive, np.ones(len(rows), np.bool_)])
        self._slot_of.update({row[0]: first + offset for offset, row in enumerate(rows)})

    # --- searching -------------------------------------------------------------------------

    def search(self, phrases: Sequence[tuple[str | None, str]], limit: int) -> list[tuple[int, float]] | None:
        """Chunk ids and BM25 scores (higher is better) for `keyword_phrases` output.

        None when FTS5 must answer instead: the index is behind the catalog (it then catches
        up in the background) or a phrase is more than one token (that needs positions).
        """
        if self.catalog.generation() != self._generation:
            self.catch_up()
            return None
        lookups: list[str] = []
        for (column, _), terms in zip(phrases, self._tokenizer.terms([p for _, p in phrases]), strict=True):
            if len(terms) > 1:
                return None
            if terms:
                lookups.append(_key(column == GRAMS_COLUMN, terms[0]))
        # While the postings catch up (or if a catch-up just began), FTS5 answers.
        if self._syncing or not self._lock.acquire(timeout=0.05):
            return None
        try:
            return self._search(lookups, limit)
        finally:
            self._lock.release()

    def search_now(
        self, phrases: Sequence[tuple[str | None, str]], limit: int, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """Like `search`, for a catalog that has no keyword index of its own to answer instead:
        the postings are brought up to date first, `allowed` (chunk ids) limits the hits, and a
        phrase of several tokens is searched as its tokens (the postings keep no positions)."""
        self.sync()
        # A repeated word counts each time, as in `search` and in FTS5, so both rank alike.
        lookups: list[str] = []
        for (column, _), terms in zip(phrases, self._tokenizer.terms([p for _, p in phrases]), strict=True):
            lookups.extend(_key(column == GRAMS_COLUMN, term) for term in terms)
        with self._lock:
            return self._search(lookups, limit, allowed)

    def unknown_words(self, words: Sequence[str]) -> list[str]:
        """Those of `words` that no chunk holds in any column, as the keyword index makes terms."""
        self.sync()
        unique = list(dict.fromkeys(words))
        with self._lock:
            return [
                word
                for word, terms in zip(unique, self._tokenizer.terms(unique), strict=True)
                if not terms or not all(self._holds(term) for term in terms)
            ]

    def _holds(self, term: str) -> bool:
        for key in (_key(False, term), _key(True, term)):
            segments = self._postings.get(key)
            if segments and bool(self._alive[_merged(segments)[0]].any()):
                return True
        return False

    def _search(
        self, keys: list[str], limit: int, allowed: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        rows = self._rows
        if not rows or not keys:
            return []
        slots_list: list[Slots] = []
        scores_list: list[Weights] = []
        for key in keys:
            segments = self._postings.get(key)
            if not segments:
                continue
            slots, frequencies = _merged(segments)
            if self._dead:
                live = self._alive[slots]
                slots, frequencies = slots[live], frequencies[live]
            hits = len(slots)
            if not hits:
                continue
            idf = math.log((rows - hits + 0.5) / (hits + 0.5))
            idf = idf if idf > 0 else 1e-6
            norm = K1 * (1 - B + B * self._lengths[slots] / self._average_length)
            weights = frequencies.astype(np.float64)
            slots_list.append(slots)
            scores_list.append(idf * weights * (K1 + 1) / (weights + norm))
        if not slots_list:
            return []
        scores = np.bincount(np.concatenate(slots_list), np.concatenate(scores_list), len(self._ids))
        if allowed is not None:
            scores[~np.isin(self._ids, np.fromiter(allowed, np.int64, len(allowed)))] = 0.0
        matched = np.flatnonzero(scores)  # every term's score is positive (idf has a floor)
        if len(matched) > limit:
            kept = matched[np.argpartition(-scores[matched], limit - 1)[:limit]]
            # Every row scoring as the last one kept stays a candidate, so equal scores at the cut
            # are settled by chunk id below (as FTS5's ORDER BY rank, rowid settles them), not by
            # where the rows happen to sit in the postings.
            matched = matched[scores[matched] >= scores[kept].min()]
        ids = self._ids[matched]
        order = np.lexsort((ids, -scores[matched]))
        return [(int(ids[i]), float(scores[matched[i]])) for i in order[:limit]]


def _key(grams: bool, term: str) -> str:
    return f"{GRAMS_COLUMN}:{term}" if grams else term


def _merged(segments: list[tuple[Slots, Frequencies]]) -> tuple[Slots, Frequencies]:
    if len(segments) == 1:
        return segments[0]
    return np.concatenate([s for s, _ in segments]), np.concatenate([w for _, w in segments])
