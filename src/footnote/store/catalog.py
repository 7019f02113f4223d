"""The catalog: documents, chunks and the keyword index in one SQLite file.

SQLite is the source of truth. Every change to a document and its chunks happens
in one transaction, so a reader sees the old version or the new one, never a mix.
The vector index follows the catalog: chunks not yet embedded are `embedded = 0`,
and ids of deleted chunks wait in `vector_tombstones` until the index drops them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from footnote.errors import StoreError
from footnote.ingest.document import Chunk, Document
from footnote.retrieval.cjk import index_grams, without_cjk
from footnote.retrieval.filters import SearchFilter
from footnote.retrieval.language import detect_language
from footnote.store.migrations import migrate


@dataclass(frozen=True)
class DocumentRecord:
    id: int
    path: str
    content_hash: str
    format: str
    title: str
    url: str | None
    size: int
    mtime: float
    ingested_at: float
    chunk_count: int = 0


@dataclass(frozen=True)
class DocumentEntry:
    """A parsed document and its chunks, ready to be stored."""

    document: Document
    content_hash: str
    size: int
    mtime: float
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True)
class ChunkRecord:
    id: int
    document_id: int
    ordinal: int
    text: str
    start: int
    end: int
    page: int | None
    heading_path: tuple[str, ...]
    token_count: int
    path: str
    title: str
    url: str | None
    format: str = ""
    mtime: float = 0.0
    language: str = ""  # `footnote.retrieval.language` code, detected from the text at ingest

    def embedding_text(self) -> str:
        return Chunk(self.ordinal, self.text, self.start, self.end, self.heading_path).embedding_text(
            self.title
        )


# BM25 weight of each keyword-index column: text, heading, title, grams (CJK bigrams).
BM25_COLUMN_WEIGHTS = (1.0, 0.5, 1.0, 1.0)
_BM25_WEIGHTS = ", ".join(str(weight) for weight in BM25_COLUMN_WEIGHTS)
_DOCUMENT_COLUMNS = "d.id, d.path, d.content_hash, d.format, d.title, d.url, d.size, d.mtime, d.ingested_at"
_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.ordinal, c.text, c.start, c.end, c.page, c.heading_path, c.token_count, "
    "d.path, d.title, d.url, d.format, d.mtime, c.language"
)


def _chunk_record(row: sqlite3.Row) -> ChunkRecord:
    return ChunkRecord(
        id=row[0],
        document_id=row[1],
        ordinal=row[2],
        text=row[3],
        start=row[4],
        end=row[5],
        page=row[6],
        heading_path=tuple(json.loads(row[7])),
        token_count=row[8],
        path=row[9],
        title=row[10],
        url=row[11],
        format=row[12],
        mtime=row[13],
        language=row[14],
    )


def keyword_columns(title: str, heading_path: Sequence[str], text: str) -> tuple[str, str, str, str]:
    """A chunk's row in the keyword index: text, heading, title and grams columns.

    CJK runs are indexed in the grams column only; elsewhere they are cut out, so that a
    number or a Latin word written against Chinese text ("2022年", "RCEP协定") is a word of its own.
    """
    heading = " > ".join(heading_path)
    grams = index_grams(f"{title} {heading} {text}")
    return without_cjk(text), without_cjk(heading), without_cjk(title), grams


def _advance_generation(db: sqlite3.Connection) -> None:
    db.execute("UPDATE chunk_generation SET value = value + 1")


class Catalog:
    """Documents and chunks in SQLite (WAL) with an FTS5 keyword index."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
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

    def generation(self) -> int:
        """A counter that every committed addition or removal of chunks moves on.

        Readers compare it before and after a multi-statement read (keyword search, vector
        look-up, chunk fetch) to know that no ingest changed the chunks in between.
        """
        with self._lock:
            return int(self._db.execute("SELECT value FROM chunk_generation").fetchone()[0])

    # --- documents -------------------------------------------------------------------------

    def document_by_path(self, path: str) -> DocumentRecord | None:
        rows = self._documents("WHERE d.path = ?", (path,))
        return rows[0] if rows else None

    def document(self, document_id: int) -> DocumentRecord | None:
        rows = self._documents("WHERE d.id = ?", (document_id,))
        return rows[0] if rows else None

    def list_documents(self) -> list[DocumentRecord]:
        return self._documents("", ())

    def _documents(self, where: str, args: tuple[object, ...]) -> list[DocumentRecord]:
        query = (
            f"SELECT {_DOCUMENT_COLUMNS}, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) "
            f"FROM documents d {where} ORDER BY d.path"
        )
        with self._lock:
            rows = self._db.execute(query, args).fetchall()
        return [DocumentRecord(*row) for row in rows]

    def document_text(self, document_id: int) -> str:
        with self._lock:
            row = self._db.execute("SELECT text FROM documents WHERE id = ?", (document_id,)).fetchone()
        if row is None:
            raise StoreError(f"no document with id {document_id}")
        return str(row[0])

    def replace_document(
        self, document: Document, content_hash: str, size: int, mtime: float, chunks: Sequence[Chunk]
    ) -> int:
        """Store `document` and its chunks in place of any earlier version at the same path."""
        entry = DocumentEntry(document, content_hash, size, mtime, tuple(chunks))
        return self.replace_documents([entry])[0]

    def replace_documents(
        self,
        entries: Sequence[DocumentEntry],
        write_vectors: Callable[[list[tuple[int, int]]], None] | None = None,
    ) -> list[int]:
        """Store documents in place of earlier versions at their paths, all in one transaction.

        With `write_vectors`, it is called inside the transaction with (chunk id, document id)
        of every new chunk, in the order of the entries' chunks, and the chunks are stored as
        embedded: readers see the old version, with its vectors, until the commit shows the new
        one with its own. If it raises, nothing is stored; vectors written under ids that were
        never committed are deleted by the ingest pipeline's full reconciliation.
        """
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
        cursor = db.execute(
            "INSERT INTO documents (path, content_hash, format, title, url, size, mtime, text, "
            "ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                document.path,
                entry.content_hash,
                document.format,
                document.title,
                document.url,
                entry.size,
                entry.mtime,
                document.text,
                time.time(),
            ),
        )
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
        """Delete documents and their chunks in one transaction; returns how many existed."""
        deleted = 0
        with self._transaction() as db:
            for document_id in document_ids:
                self._delete_chunks(db, document_id)
                deleted += db.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount
        return deleted

    def chunk_ids(self) -> dict[int, bool]:
        """Every chunk id with whether its vector is stored."""
        with self._lock:
            return {int(row[0]): bool(row[1]) for row in self._db.execute("SELECT id, embedded FROM chunks")}

    def mark_pending(self, ids: Sequence[int]) -> None:
        """Mark chunks as lacking their vector, so that the next embedding pass stores it."""
        with self._transaction() as db:
            db.executemany("UPDATE chunks SET embedded = 0 WHERE id = ?", [(i,) for i in ids])

    def delete_document(self, document_id: int) -> bool:
        with self._transaction() as db:
            self._delete_chunks(db, document_id)
            cursor = db.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        return cursor.rowcount > 0

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
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE c.id IN ({marks})"
        )
        with self._lock:
            rows = self._db.execute(query, list(ids)).fetchall()
        return {row[0]: _chunk_record(row) for row in rows}

    def chunk_languages(self, ids: Sequence[int]) -> dict[int, str]:
        """The detected language of each of chunks `ids` that exists."""
        return {chunk_id: record.language for chunk_id, record in self.chunks(ids).items()}

    def chunk_id_list(self) -> list[int]:
        """Every chunk id, ascending."""
        with self._lock:
            return [int(row[0]) for row in self._db.execute("SELECT id FROM chunks ORDER BY id")]

    def keyword_rows(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str]]:
        """(chunk id, text, heading, title, grams): the keyword-index rows of chunks `ids`."""
        rows: list[tuple[int, str, str, str, str]] = []
        for start in range(0, len(ids), 500):
            found = self.chunks(ids[start : start + 500])
            for chunk_id in ids[start : start + 500]:
                record = found.get(chunk_id)
                if record is not None:
                    rows.append((chunk_id, *keyword_columns(record.title, record.heading_path, record.text)))
        return rows

    def pending_chunks(self, limit: int = 512) -> list[ChunkRecord]:
        """Chunks whose vectors are not yet in the vector index."""
        query = (
            f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.embedded = 0 ORDER BY c.id LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(query, (limit,)).fetchall()
        return [_chunk_record(row) for row in rows]

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
        """Ids of the documents `filters` lets through."""
        where, args = filters.sql("d")
        with self._lock:
            rows = self._db.execute(f"SELECT d.id FROM documents d WHERE {where} ORDER BY d.id", args)
            return [int(row[0]) for row in rows]
