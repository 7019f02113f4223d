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

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from footnote.core.document import Chunk, Document
from footnote.core.filters import SearchFilter
from footnote.errors import StoreError
from footnote.store.records import (
    ChunkChanges,
    ChunkRecord,
    CollectionRecord,
    DocumentEntry,
    DocumentRecord,
    KeyRecord,
    WriteVectors,
    keyword_columns,
)

if TYPE_CHECKING:
    from footnote.config import Settings


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
