"""The embedded catalog: documents, chunks and the keyword index in one SQLite file.

Chunks not yet embedded are `embedded = 0`, and ids of deleted chunks wait in
`vector_tombstones` until the vector index drops them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from footnote.core.filters import SearchFilter
from footnote.core.language import detect_language
from footnote.errors import StoreError
from footnote.store.catalog import Catalog
from footnote.store.migrations import migrate
from footnote.store.records import (
    BM25_COLUMN_WEIGHTS,
    CHUNK_COLUMNS,
    COLLECTIONS_QUERY,
    KEY_COLUMNS,
    ChunkRecord,
    CollectionRecord,
    DocumentEntry,
    DocumentRecord,
    KeyRecord,
    WriteVectors,
    chunk_record,
    documents_query,
    key_record,
    key_row,
    keyword_columns,
)

_BM25_WEIGHTS = ", ".join(str(weight) for weight in BM25_COLUMN_WEIGHTS)


def _advance_generation(db: sqlite3.Connection) -> None:
    db.execute("UPDATE chunk_generation SET value = value + 1")


class SqliteCatalog(Catalog):
    """Documents and chunks in SQLite (WAL) with an FTS5 keyword index."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.location = str(path)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self.schema_version = migrate(self._db)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"catalog {path} cannot be opened ({exc}); move it aside and ingest again to rebuild it"
            ) from exc
        self._lock = threading.RLock()

    def close(self) -> None:
        # Under the lock: closing the connection while another thread runs a statement on it
        # (a keyword index syncing in the background) crashes the process; after the close, that
        # thread's next statement raises instead.
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def wait_for_writers(self) -> bool:
        # Writers hold SQLite's write lock from BEGIN IMMEDIATE to their commit: take it once.
        try:
            with self._transaction():
                return True
        except sqlite3.OperationalError:  # still locked after the connection's busy timeout
            return False

    def generation(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT value FROM chunk_generation").fetchone()[0])

    # --- documents -------------------------------------------------------------------------

    def find_documents(
        self,
        document_id: int | None = None,
        path: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> list[DocumentRecord]:
        query, args = documents_query(document_id, path, "?", collections)
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [DocumentRecord(*row) for row in rows]

    def collections(self) -> list[CollectionRecord]:
        with self._lock:
            return [CollectionRecord(*row) for row in self._db.execute(COLLECTIONS_QUERY)]

    # --- scoped API keys -------------------------------------------------------------------

    def add_key(self, key: KeyRecord) -> None:
        try:
            with self._transaction() as db:
                db.execute(f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?)", key_row(key))
        except sqlite3.IntegrityError:
            raise StoreError(
                f"a key named {key.name!r} exists; revoke it first or choose another name"
            ) from None

    def keys(self) -> list[KeyRecord]:
        with self._lock:
            rows = self._db.execute(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY name").fetchall()
        return [key_record(row) for row in rows]

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,)
            ).fetchone()
        return key_record(row) if row is not None else None

    def revoke_key(self, name: str) -> bool:
        with self._transaction() as db:
            return db.execute("DELETE FROM api_keys WHERE name = ?", (name,)).rowcount > 0

    def document_text(self, document_id: int) -> str:
        with self._lock:
            row = self._db.execute("SELECT text FROM documents WHERE id = ?", (document_id,)).fetchone()
        if row is None:
            raise StoreError(f"no document with id {document_id}")
        return str(row[0])

    def replace_documents(
        self,
        entries: Sequence[DocumentEntry],
        write_vectors: WriteVectors | None = None,
    ) -> list[int]:
        embedded = 1 if write_vectors is not None else 0
        document_ids: list[int] = []
        chunk_ids: list[tuple[int, int]] = []
        with self._transaction() as db:
            for entry in entries:
                document_id, ids = self._insert_document(db, entry, embedded)
                document_ids.append(document_id)
                chunk_ids.extend((chunk_id, document_id) for chunk_id in ids)
            if write_vectors is not None and chunk_ids:
                write_vectors(chunk_ids)
        return document_ids

    def _insert_document(
        self, db: sqlite3.Connection, entry: DocumentEntry, embedded: int
    ) -> tuple[int, list[int]]:
        document = entry.document
        old = db.execute("SELECT id FROM documents WHERE path = ?", (document.path,)).fetchone()
        if old is not None:
            self._delete_chunks(db, old[0])
            db.execute("DELETE FROM documents WHERE id = ?", (old[0],))
        values = entry.row(time.time())
        marks = ", ".join("?" * len(values))
        cursor = db.execute(f"INSERT INTO documents ({DocumentEntry.COLUMNS}) VALUES ({marks})", values)
        document_id = int(cursor.lastrowid or 0)
        _advance_generation(db)
        ids: list[int] = []
        for chunk in entry.chunks:
            cursor = db.execute(
                "INSERT INTO chunks (document_id, ordinal, text, start, end, page, heading_path, "
                "token_count, embedded, language) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document_id,
                    chunk.ordinal,
                    chunk.text,
                    chunk.start,
                    chunk.end,
                    chunk.page,
                    json.dumps(list(chunk.heading_path)),
                    chunk.token_count,
                    embedded,
                    detect_language(chunk.text),
                ),
            )
            chunk_id = int(cursor.lastrowid or 0)
            ids.append(chunk_id)
            db.execute(
                "INSERT INTO chunks_fts (rowid, text, heading, title, grams) VALUES (?, ?, ?, ?, ?)",
                (chunk_id, *keyword_columns(document.title, chunk.heading_path, chunk.text)),
            )
        return document_id, ids

    def delete_documents(self, document_ids: Sequence[int]) -> int:
        deleted = 0
        with self._transaction() as db:
            for document_id in document_ids:
                self._delete_chunks(db, document_id)
                deleted += db.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount
        return deleted

    def chunk_ids(self) -> dict[int, bool]:
        with self._lock:
            return {int(row[0]): bool(row[1]) for row in self._db.execute("SELECT id, embedded FROM chunks")}

    def embedded_languages(self) -> dict[int, str]:
        with self._lock:
            rows = self._db.execute("SELECT id, language FROM chunks WHERE embedded = 1")
            return {int(row[0]): str(row[1]) for row in rows}

    def mark_pending(self, ids: Sequence[int]) -> None:
        with self._transaction() as db:
            db.executemany("UPDATE chunks SET embedded = 0 WHERE id = ?", [(i,) for i in ids])

    @staticmethod
    def _delete_chunks(db: sqlite3.Connection, document_id: int) -> None:
        ids = [row[0] for row in db.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))]
        db.executemany("INSERT OR IGNORE INTO vector_tombstones (chunk_id) VALUES (?)", [(i,) for i in ids])
        db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in ids])
        db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
        _advance_generation(db)

    # --- chunks ----------------------------------------------------------------------------

    def chunks(self, ids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        query = (
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE c.id IN ({marks})"
        )
        with self._lock:
            rows = self._db.execute(query, list(ids)).fetchall()
        return {row[0]: chunk_record(row) for row in rows}

    def chunk_id_list(self) -> list[int]:
        with self._lock:
            return [int(row[0]) for row in self._db.execute("SELECT id FROM chunks ORDER BY id")]

    def pending_chunks(self, limit: int = 512) -> list[ChunkRecord]:
        query = (
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.embedded = 0 ORDER BY c.id LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(query, (limit,)).fetchall()
        return [chunk_record(row) for row in rows]

    def count_pending(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM chunks WHERE embedded = 0").fetchone()[0])

    def mark_embedded(self, ids: Sequence[int]) -> None:
        with self._transaction() as db:
            db.executemany("UPDATE chunks SET embedded = 1 WHERE id = ?", [(i,) for i in ids])

    def tombstones(self) -> list[int]:
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT chunk_id FROM vector_tombstones")]

    def clear_tombstones(self, ids: Sequence[int]) -> None:
        with self._transaction() as db:
            db.executemany("DELETE FROM vector_tombstones WHERE chunk_id = ?", [(i,) for i in ids])

    def count_chunks(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def keyword_search(
        self, match: str, limit: int, filters: SearchFilter | None = None
    ) -> list[tuple[int, float]]:
        """Chunk ids and BM25 scores (higher is better) for an FTS5 MATCH expression."""
        if not match:
            return []
        if filters is None or not filters.active:
            query = (
                f"SELECT rowid, bm25(chunks_fts, {_BM25_WEIGHTS}) AS rank FROM chunks_fts "
                "WHERE chunks_fts MATCH ? ORDER BY rank, rowid LIMIT ?"
            )
            args: list[object] = [match, limit]
        else:
            where, where_args = filters.sql("d")
            query = (
                f"SELECT f.rowid, bm25(chunks_fts, {_BM25_WEIGHTS}) AS rank FROM chunks_fts f "
                "JOIN chunks c ON c.id = f.rowid JOIN documents d ON d.id = c.document_id "
                f"WHERE chunks_fts MATCH ? AND {where} ORDER BY rank, f.rowid LIMIT ?"
            )
            args = [match, *where_args, limit]
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [(int(row[0]), -float(row[1])) for row in rows]

    def unknown_words(self, words: Sequence[str]) -> list[str]:
        """Those of `words` that no chunk holds in any column of the keyword index (which stems
        and folds case as it does for a search)."""
        query = "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1"
        unknown = []
        with self._lock:
            for word in dict.fromkeys(words):
                phrase = '"' + word.replace('"', '""') + '"'
                if self._db.execute(query, (phrase,)).fetchone() is None:
                    unknown.append(word)
        return unknown

    def document_ids(self, filters: SearchFilter) -> list[int]:
        where, args = filters.sql("d")
        with self._lock:
            rows = self._db.execute(f"SELECT d.id FROM documents d WHERE {where} ORDER BY d.id", args)
            return [int(row[0]) for row in rows]

    def filtered_chunk_ids(self, filters: SearchFilter) -> set[int]:
        where, args = filters.sql("d")
        query = f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}"
        with self._lock:
            return {int(row[0]) for row in self._db.execute(query, args)}
