"""The catalog protocol: documents, chunks, and the bookkeeping that the vector index follows.

The catalog is the source of truth. Every change to a document and its chunks happens
in one transaction, so a reader sees the old version or the new one, never a mix.
The vector index follows the catalog: chunks not yet embedded are pending, and ids of
deleted chunks wait as tombstones until the index drops them.

Two implementations: `SqliteCatalog` (one file in FOOTNOTE_HOME, with an FTS5 keyword
index; the default) and `PostgresCatalog` (shared by replicas; keyword search comes
from postings in memory, kept in step through its change log). `open_catalog` picks one.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from footnote.core.cjk import index_grams, without_cjk
from footnote.core.collections import DEFAULT_COLLECTION
from footnote.core.document import Chunk, Document, embedding_text
from footnote.core.filters import SearchFilter
from footnote.core.span import Span, Spanned
from footnote.errors import StoreError

if TYPE_CHECKING:
    from footnote.config import Settings


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
    collection: str = DEFAULT_COLLECTION
    chunk_count: int = 0


@dataclass(frozen=True)
class DocumentEntry:
    """A parsed document and its chunks, ready to be stored."""

    document: Document
    content_hash: str
    size: int
    mtime: float
    chunks: tuple[Chunk, ...]
    collection: str = DEFAULT_COLLECTION

    # The `documents` table's columns, in the order `row` gives their values.
    COLUMNS = "path, content_hash, format, title, url, size, mtime, text, ingested_at, collection"

    def row(self, ingested_at: float) -> tuple[object, ...]:
        """The values of `COLUMNS` for this entry, stored at `ingested_at` (seconds since the epoch)."""
        d = self.document
        return (
            d.path,
            self.content_hash,
            d.format,
            d.title,
            d.url,
            self.size,
            self.mtime,
            d.text,
            ingested_at,
            self.collection,
        )


@dataclass(frozen=True)
class ChunkRecord(Spanned):
    """A stored chunk with its document's path, title and format; `start`, `end`,
    `heading_path` and `page` read its span."""

    id: int
    document_id: int
    ordinal: int
    text: str
    span: Span
    token_count: int
    path: str
    title: str
    url: str | None
    format: str = ""
    mtime: float = 0.0
    language: str = ""  # `footnote.core.language` code, detected from the text at ingest

    def embedding_text(self) -> str:
        return embedding_text(self.text, self.heading_path, self.title)


@dataclass(frozen=True)
class CollectionRecord:
    """A collection with how many documents and chunks it holds."""

    name: str
    documents: int
    chunks: int


@dataclass(frozen=True)
class KeyRecord:
    """A scoped API key as the catalog keeps it: its name, the SHA-256 of the key (never the
    key itself), and the collections it reads and writes."""

    name: str
    key_hash: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    created_at: float


@dataclass(frozen=True)
class ChunkChanges:
    """Chunks added and removed between two generations of the catalog."""

    added: tuple[int, ...]
    removed: tuple[int, ...]


# Called inside a document replacement with (chunk id, document id) of every new chunk.
WriteVectors = Callable[[list[tuple[int, int]]], None]

# BM25 weight of each keyword-index column: text, heading, title, grams (CJK bigrams).
BM25_COLUMN_WEIGHTS = (1.0, 0.5, 1.0, 1.0)


# --- SQL that both dialects share ------------------------------------------------------------

DOCUMENT_COLUMNS = (
    "d.id, d.path, d.content_hash, d.format, d.title, d.url, d.size, d.mtime, d.ingested_at, d.collection"
)
CHUNK_COLUMNS = (
    'c.id, c.document_id, c.ordinal, c.text, c.start, c."end", c.page, c.heading_path, c.token_count, '
    "d.path, d.title, d.url, d.format, d.mtime, c.language"
)


COLLECTIONS_QUERY = (
    "SELECT d.collection, COUNT(DISTINCT d.id), COUNT(c.id) FROM documents d "
    "LEFT JOIN chunks c ON c.document_id = d.id GROUP BY d.collection ORDER BY d.collection"
)
# The `api_keys` table's columns; `read` and `write` hold JSON lists of collection names.
KEY_COLUMNS = 'name, key_hash, "read", "write", created_at'


def key_row(key: KeyRecord) -> tuple[object, ...]:
    return (key.name, key.key_hash, json.dumps(list(key.read)), json.dumps(list(key.write)), key.created_at)


def key_record(row: Sequence[object]) -> KeyRecord:
    name, key_hash, read, write, created_at = row
    return KeyRecord(
        str(name),
        str(key_hash),
        tuple(json.loads(str(read))),
        tuple(json.loads(str(write))),
        float(created_at),  # type: ignore[arg-type]
    )


def chunk_record(row: Sequence[object]) -> ChunkRecord:
    """A ChunkRecord from a row of `CHUNK_COLUMNS`."""
    chunk_id, document_id, ordinal, text, start, end, page, headings, token_count, *rest = row
    span = Span(start, end, tuple(json.loads(str(headings))), page)  # type: ignore[arg-type]
    return ChunkRecord(chunk_id, document_id, ordinal, text, span, token_count, *rest)  # type: ignore[arg-type]


def documents_query(
    document_id: int | None, path: str | None, mark: str, collections: Sequence[str] | None = None
) -> tuple[str, list[object]]:
    """The query behind `Catalog.find_documents`, with `mark` as the dialect's placeholder."""
    clauses, args = list[str](), list[object]()
    if document_id is not None:
        clauses, args = [f"d.id = {mark}"], [document_id]
    elif path is not None:
        clauses, args = [f"d.path = {mark}"], [path]
    if collections is not None:
        clauses.append(f"d.collection IN ({','.join([mark] * len(collections)) or 'NULL'})")
        args.extend(collections)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    query = (
        f"SELECT {DOCUMENT_COLUMNS}, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) "
        f"FROM documents d {where} ORDER BY d.path"
    )
    return query, args


def keyword_columns(title: str, heading_path: Sequence[str], text: str) -> tuple[str, str, str, str]:
    """A chunk's row in the keyword index: text, heading, title and grams columns.

    CJK runs are indexed in the grams column only; elsewhere they are cut out, so that a
    number or a Latin word written against Chinese text ("2022年", "RCEP协定") is a word of its own.
    """
    heading = " > ".join(heading_path)
    grams = index_grams(f"{title} {heading} {text}")
    return without_cjk(text), without_cjk(heading), without_cjk(title), grams


class PathClaims:
    """The files one ingest run is working on, so that a run elsewhere leaves them alone.

    The embedded catalog has one writer at a time and claims nothing; a shared one holds a
    lock per file until its new version is committed (or the claiming process dies).
    """

    def take(self, path: str) -> bool:
        """Claim `path`; False when another run holds it."""
        return True

    def release(self, paths: Sequence[str]) -> None:
        """Give up the claims on `paths` (those not held are ignored)."""

    def close(self) -> None:
        """Give up every claim."""


class Catalog(ABC):
    """Documents and chunks, the generation counter, tombstones and pending-embedding marks."""

    # Does the catalog answer keyword searches itself? If not, postings in memory do.
    searches_keywords: ClassVar[bool] = True
    schema_version: int
    location: str  # where it lives, fit to show (a path, or a URL without its password)

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def generation(self) -> int:
        """A counter that every committed addition or removal of chunks moves on.

        Readers compare it before and after a multi-statement read (keyword search, vector
        look-up, chunk fetch) to know that no ingest changed the chunks in between.
        """

    def changes_since(self, generation: int) -> ChunkChanges | None:
        """Chunks added and removed after `generation`; None when the catalog keeps no change
        log that far back (the caller then compares every chunk id)."""
        return None

    def on_change(self, callback: Callable[[], None]) -> None:
        """Have `callback` called soon after chunks change in another process (where the
        catalog can tell); the embedded catalog is read again on every search instead."""
        return None

    def path_claims(self) -> PathClaims:
        return PathClaims()

    def wait_for_writers(self) -> bool:
        """Wait until every document replacement begun before this call, in any process, has
        committed or rolled back; False when one is still open after a while.

        A full reconciliation waits here between listing the vector index and listing the chunks,
        so that the vectors a replacement writes inside its transaction (another replica's ingest)
        are never taken for orphans: by the time the chunks are listed, that transaction's chunks
        are there, or it is over and its vectors are orphans indeed.
        """
        return True

    # --- documents -------------------------------------------------------------------------

    @abstractmethod
    def find_documents(
        self,
        document_id: int | None = None,
        path: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> list[DocumentRecord]:
        """The document with `document_id` or at `path` (every document when neither), by path;
        only those in `collections` when it is given."""

    def document_by_path(self, path: str) -> DocumentRecord | None:
        rows = self.find_documents(path=path)
        return rows[0] if rows else None

    def document(self, document_id: int) -> DocumentRecord | None:
        rows = self.find_documents(document_id=document_id)
        return rows[0] if rows else None

    def list_documents(self, collections: Sequence[str] | None = None) -> list[DocumentRecord]:
        return self.find_documents(collections=collections)

    @abstractmethod
    def collections(self) -> list[CollectionRecord]:
        """Every collection that holds a document, by name."""

    # --- scoped API keys -------------------------------------------------------------------

    @abstractmethod
    def add_key(self, key: KeyRecord) -> None:
        """Store a new key; a StoreError when its name is taken."""

    @abstractmethod
    def keys(self) -> list[KeyRecord]:
        """Every stored key, by name."""

    @abstractmethod
    def key_by_hash(self, key_hash: str) -> KeyRecord | None: ...

    @abstractmethod
    def revoke_key(self, name: str) -> bool:
        """Delete the key called `name`; False when there is none."""

    @abstractmethod
    def document_text(self, document_id: int) -> str: ...

    def replace_document(
        self, document: Document, content_hash: str, size: int, mtime: float, chunks: Sequence[Chunk]
    ) -> int:
        """Store `document` and its chunks in place of any earlier version at the same path."""
        entry = DocumentEntry(document, content_hash, size, mtime, tuple(chunks))
        return self.replace_documents([entry])[0]

    @abstractmethod
    def replace_documents(
        self, entries: Sequence[DocumentEntry], write_vectors: WriteVectors | None = None
    ) -> list[int]:
        """Store documents in place of earlier versions at their paths, all in one transaction.

        With `write_vectors`, it is called inside the transaction with (chunk id, document id)
        of every new chunk, in the order of the entries' chunks, and the chunks are stored as
        embedded: readers see the old version, with its vectors, until the commit shows the new
        one with its own. If it raises, nothing is stored; vectors written under ids that were
        never committed are deleted by the ingest pipeline's full reconciliation.
        """

    @abstractmethod
    def delete_documents(self, document_ids: Sequence[int]) -> int:
        """Delete documents and their chunks in one transaction; returns how many existed."""

    def delete_document(self, document_id: int) -> bool:
        return self.delete_documents([document_id]) > 0

    @abstractmethod
    def document_ids(self, filters: SearchFilter) -> list[int]:
        """Ids of the documents `filters` lets through."""

    # --- chunks ----------------------------------------------------------------------------

    @abstractmethod
    def chunks(self, ids: Sequence[int]) -> dict[int, ChunkRecord]:
        """The live chunks among `ids` (a deleted chunk is simply absent)."""

    def chunk_languages(self, ids: Sequence[int]) -> dict[int, str]:
        """The detected language of each of chunks `ids` that exists."""
        return {chunk_id: record.language for chunk_id, record in self.chunks(ids).items()}

    @abstractmethod
    def chunk_ids(self) -> dict[int, bool]:
        """Every chunk id with whether its vector is stored."""

    def chunk_id_list(self) -> list[int]:
        """Every chunk id, ascending."""
        return sorted(self.chunk_ids())

    @abstractmethod
    def embedded_languages(self) -> dict[int, str]:
        """Every chunk whose vector is stored, with its detected language."""

    @abstractmethod
    def filtered_chunk_ids(self, filters: SearchFilter) -> set[int]:
        """Ids of the chunks of the documents `filters` lets through."""

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

    @abstractmethod
    def count_chunks(self) -> int: ...

    # --- what the vector index follows ------------------------------------------------------

    @abstractmethod
    def pending_chunks(self, limit: int = 512) -> list[ChunkRecord]:
        """Chunks whose vectors are not yet in the vector index."""

    @abstractmethod
    def count_pending(self) -> int: ...

    @abstractmethod
    def mark_embedded(self, ids: Sequence[int]) -> None: ...

    @abstractmethod
    def mark_pending(self, ids: Sequence[int]) -> None:
        """Mark chunks as lacking their vector, so that the next embedding pass stores it."""

    @abstractmethod
    def tombstones(self) -> list[int]: ...

    @abstractmethod
    def clear_tombstones(self, ids: Sequence[int]) -> None: ...

    # --- a keyword index of its own (FTS5), where `searches_keywords` ------------------------

    def keyword_search(
        self, match: str, limit: int, filters: SearchFilter | None = None
    ) -> list[tuple[int, float]]:
        """Chunk ids and BM25 scores (higher is better) for an FTS5 MATCH expression."""
        raise StoreError(f"the catalog at {self.location} has no keyword index; postings answer instead")

    def unknown_words(self, words: Sequence[str]) -> list[str]:
        """Those of `words` that no chunk holds in any column of the keyword index."""
        raise StoreError(f"the catalog at {self.location} has no keyword index; postings answer instead")


def open_catalog(settings: Settings) -> Catalog:
    """The shared PostgreSQL catalog when `catalog_url` is set, else SQLite in FOOTNOTE_HOME."""
    if settings.catalog_url:
        from footnote.store.postgres import PostgresCatalog

        return PostgresCatalog(settings.catalog_url)
    from footnote.store.sqlite import SqliteCatalog

    return SqliteCatalog(settings.catalog_path)
