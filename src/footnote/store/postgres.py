"""The shared catalog on PostgreSQL, for any number of `footnote serve` replicas.

Every document replacement or deletion is one transaction; it bumps the generation
counter and appends what it added and removed to `chunk_changes` under the new
generation. The counter's row is locked from the bump to the commit, so generations
commit in order and a replica that applies the change log past the generation it has
seen misses nothing. Each commit also sends a NOTIFY, which wakes the replicas'
listeners; they poll the counter as well, in case a notification is lost.

Keyword search is not done in SQL: every replica answers it from postings in memory
(`footnote.retrieval.postings`), scored as the embedded catalog's FTS5 scores.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from footnote.core.filters import SearchFilter
from footnote.errors import StoreError, StoreUnavailable
from footnote.store.catalog import Catalog, PathClaims
from footnote.store.postgres_claims import AdvisoryPathClaims
from footnote.store.postgres_schema import (
    MIGRATION_LOCK,
    SETTING,
    connect,
    connection_options,
    migrate,
    shown_url,
)
from footnote.store.postgres_writes import (
    CHANGES_CHANNEL,
    CHUNK_FIELDS,
    DOCUMENT_FIELDS,
    copy_rows,
    delete_rows,
    insert_chunks,
    insert_document,
    record_changes,
)
from footnote.store.records import (
    CHUNK_COLUMNS,
    COLLECTIONS_QUERY,
    KEY_COLUMNS,
    ChunkChanges,
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
)

log = logging.getLogger(__name__)

POLL_S = 1.0  # how often a listener looks at the generation counter without a notification
POOL_SIZE = 10
POOL_WAIT_S = 5.0  # how long a request waits for a pooled connection before it fails
# Every document replacement holds this advisory lock shared until it commits; `wait_for_writers`
# takes it exclusively, once. Two int4 keys: a key space apart from the one-bigint path locks.
WRITERS_LOCK = (MIGRATION_LOCK, 2)
WRITERS_WAIT_MS = 10_000  # how long a reconciliation waits for open replacements to end
_CHUNKS_JOINED = f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.id = c.document_id"


class PostgresCatalog(Catalog):
    """Documents and chunks in a PostgreSQL database shared by replicas."""

    searches_keywords: ClassVar[bool] = False

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = shown_url(url)
        with connect(url) as connection:
            self.schema_version = migrate(connection, url)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=POOL_SIZE,
            kwargs=connection_options(),
            timeout=POOL_WAIT_S,
            check=ConnectionPool.check_connection,
            open=True,
            name="footnote-catalog",
        )
        self._callbacks: list[Callable[[], None]] = []
        self._listener: threading.Thread | None = None
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        self._pool.close()
        if self._listener is not None:
            self._listener.join(timeout=POLL_S * 3)

    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        problem = " ".join(str(exc).split()) or type(exc).__name__
        return StoreUnavailable(SETTING, self.location, f"the catalog database was lost ({problem})")

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection in a transaction, committed when the block ends without error."""
        try:
            with self._pool.connection() as connection:
                yield connection
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise self._unavailable(exc) from exc

    def _rows(self, query: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as connection:
            return connection.execute(query, args).fetchall()

    def generation(self) -> int:
        return int(self._rows("SELECT value FROM chunk_generation")[0][0])

    def changes_since(self, generation: int) -> ChunkChanges | None:
        # One statement, one snapshot: the pruning mark and the rows it left agree.
        rows = self._rows(
            "SELECT g.pruned_through, c.chunk_id, c.added FROM chunk_generation g "
            "LEFT JOIN chunk_changes c ON c.generation > %s ORDER BY c.id",
            (generation,),
        )
        if int(rows[0][0]) > generation:
            return None  # rows it needs are pruned
        changes = [(int(chunk_id), bool(added)) for _, chunk_id, added in rows if chunk_id is not None]
        removed = {chunk_id for chunk_id, added in changes if not added}
        added_ids = [chunk_id for chunk_id, added in changes if added and chunk_id not in removed]
        return ChunkChanges(tuple(added_ids), tuple(sorted(removed)))

    # --- following other replicas -----------------------------------------------------------

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)
        if self._listener is None:
            self._listener = threading.Thread(
                target=self._listen, name="footnote-catalog-listen", daemon=True
            )
            self._listener.start()

    def _listen(self) -> None:
        """Call the callbacks whenever the generation moves: on a NOTIFY, or seen when polling."""
        seen: int | None = None
        while not self._closed.is_set():
            try:
                with connect(self.url) as connection:
                    connection.execute(f"LISTEN {CHANGES_CHANNEL}")
                    while not self._closed.is_set():
                        row = connection.execute("SELECT value FROM chunk_generation").fetchone()
                        current = int(row[0]) if row else 0
                        if current != seen:
                            seen = current
                            for callback in list(self._callbacks):
                                callback()
                        for _ in connection.notifies(timeout=POLL_S, stop_after=1):
                            pass
            except (psycopg.Error, StoreError) as exc:
                if not self._closed.is_set():
                    log.warning("catalog change listener: %s; retrying", " ".join(str(exc).split()))
                    self._closed.wait(POLL_S)

    def path_claims(self) -> PathClaims:
        return AdvisoryPathClaims(self.url)

    def wait_for_writers(self) -> bool:
        with self._connection() as connection:
            connection.execute(f"SET LOCAL lock_timeout = {WRITERS_WAIT_MS}")
            try:
                connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", WRITERS_LOCK)
            except psycopg.errors.LockNotAvailable:
                connection.rollback()
                return False
        return True  # the lock goes with the commit: writers waiting behind it go on at once

    # --- documents -------------------------------------------------------------------------

    def find_documents(
        self,
        document_id: int | None = None,
        path: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> list[DocumentRecord]:
        query, args = documents_query(document_id, path, "%s", collections)
        return [DocumentRecord(*row) for row in self._rows(query, args)]

    def collections(self) -> list[CollectionRecord]:
        return [CollectionRecord(str(n), int(d), int(c)) for n, d, c in self._rows(COLLECTIONS_QUERY)]

    # --- scoped API keys -------------------------------------------------------------------

    def add_key(self, key: KeyRecord) -> None:
        try:
            with self._connection() as connection:
                connection.execute(
                    f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s)", key_row(key)
                )
        except psycopg.errors.UniqueViolation:
            raise StoreError(
                f"a key named {key.name!r} exists; revoke it first or choose another name"
            ) from None

    def keys(self) -> list[KeyRecord]:
        return [key_record(row) for row in self._rows(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY name")]

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        rows = self._rows(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,))
        return key_record(rows[0]) if rows else None

    def revoke_key(self, name: str) -> bool:
        with self._connection() as connection:
            return connection.execute("DELETE FROM api_keys WHERE name = %s", (name,)).rowcount > 0

    def document_text(self, document_id: int) -> str:
        rows = self._rows("SELECT text FROM documents WHERE id = %s", (document_id,))
        if not rows:
            raise StoreError(f"no document with id {document_id}")
        return str(rows[0][0])

    def replace_documents(
        self, entries: Sequence[DocumentEntry], write_vectors: WriteVectors | None = None
    ) -> list[int]:
        document_ids: list[int] = []
        new: list[tuple[int, int]] = []
        removed: list[int] = []
        with self._connection() as connection:
            connection.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", WRITERS_LOCK)
            # One lock per path, taken in order, so two replicas storing the same file serialize.
            for path in sorted({entry.document.path for entry in entries}):
                connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", (path,))
            for entry in entries:
                old = connection.execute(
                    "SELECT id FROM documents WHERE path = %s", (entry.document.path,)
                ).fetchone()
                if old is not None:
                    removed.extend(delete_rows(connection, [int(old[0])])[1])
                document_id = insert_document(connection, entry)
                ids = insert_chunks(connection, document_id, entry, embedded=write_vectors is not None)
                document_ids.append(document_id)
                new.extend((chunk_id, document_id) for chunk_id in ids)
            if write_vectors is not None and new:
                write_vectors(new)
            record_changes(connection, [chunk_id for chunk_id, _ in new], removed)
        return document_ids

    def delete_documents(self, document_ids: Sequence[int]) -> int:
        with self._connection() as connection:
            deleted, removed = delete_rows(connection, list(document_ids))
            record_changes(connection, [], removed)
        return deleted

    def document_ids(self, filters: SearchFilter) -> list[int]:
        where, args = filters.sql("d", postgres=True)
        rows = self._rows(f"SELECT d.id FROM documents d WHERE {where} ORDER BY d.id", args)
        return [int(row[0]) for row in rows]

    # --- chunks ----------------------------------------------------------------------------

    def chunks(self, ids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not ids:
            return {}
        rows = self._rows(f"{_CHUNKS_JOINED} WHERE c.id = ANY(%s) ORDER BY c.id", (list(ids),))
        return {int(row[0]): chunk_record(row) for row in rows}

    def chunk_ids(self) -> dict[int, bool]:
        return {int(i): bool(e) for i, e in self._rows("SELECT id, embedded FROM chunks")}

    def embedded_languages(self) -> dict[int, str]:
        return {
            int(i): str(language)
            for i, language in self._rows("SELECT id, language FROM chunks WHERE embedded")
        }

    def chunk_id_list(self) -> list[int]:
        return [int(row[0]) for row in self._rows("SELECT id FROM chunks ORDER BY id")]

    def filtered_chunk_ids(self, filters: SearchFilter) -> set[int]:
        where, args = filters.sql("d", postgres=True)
        rows = self._rows(
            f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}", args
        )
        return {int(row[0]) for row in rows}

    def count_chunks(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM chunks")[0][0])

    # --- what the vector index follows ------------------------------------------------------

    def pending_chunks(self, limit: int = 512) -> list[ChunkRecord]:
        rows = self._rows(f"{_CHUNKS_JOINED} WHERE NOT c.embedded ORDER BY c.id LIMIT %s", (limit,))
        return [chunk_record(row) for row in rows]

    def count_pending(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM chunks WHERE NOT embedded")[0][0])

    def mark_embedded(self, ids: Sequence[int]) -> None:
        self._rows_changed("UPDATE chunks SET embedded = TRUE WHERE id = ANY(%s)", ids)

    def mark_pending(self, ids: Sequence[int]) -> None:
        self._rows_changed("UPDATE chunks SET embedded = FALSE WHERE id = ANY(%s)", ids)

    def tombstones(self) -> list[int]:
        return [int(row[0]) for row in self._rows("SELECT chunk_id FROM vector_tombstones")]

    def clear_tombstones(self, ids: Sequence[int]) -> None:
        self._rows_changed("DELETE FROM vector_tombstones WHERE chunk_id = ANY(%s)", ids)

    # --- moving an embedded index in ---------------------------------------------------------

    def import_documents(
        self,
        documents: Sequence[tuple[DocumentRecord, str, Sequence[ChunkRecord]]],
        embedded: dict[int, bool],
    ) -> None:
        """Store (record, text, chunks) of another catalog under their own ids, in one transaction;
        `embedded` says which chunks have their vectors in the shared index."""
        document_rows = [
            (
                d.id,
                d.path,
                d.content_hash,
                d.format,
                d.title,
                d.url,
                d.size,
                d.mtime,
                text,
                d.ingested_at,
                d.collection,
            )
            for d, text, _ in documents
        ]
        chunks = [c for _, _, document_chunks in documents for c in document_chunks]
        chunk_rows = [
            (c.id, c.document_id, c.ordinal, c.text, c.start, c.end, c.page, json.dumps(list(c.heading_path)),
             c.token_count, embedded.get(c.id, False), c.language)
            for c in chunks
        ]  # fmt: skip
        with self._connection() as connection:
            copy_rows(connection, "documents", DOCUMENT_FIELDS, document_rows)
            copy_rows(connection, "chunks", CHUNK_FIELDS, chunk_rows)
            # New rows must never take an id the copied ones hold.
            for table in ("documents", "chunks"):
                connection.execute(
                    f"SELECT setval('{table}_id_seq', GREATEST((SELECT max(id) FROM {table}), 1))"
                )
            record_changes(connection, [c.id for c in chunks], [])

    def _rows_changed(self, statement: str, ids: Sequence[int]) -> None:
        if ids:
            with self._connection() as connection:
                connection.execute(statement, (list(ids),))
