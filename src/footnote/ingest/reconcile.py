"""Keeping the vector index in line with the catalog, the source of truth.

A run killed at any moment leaves vectors of chunks never committed, or committed chunks
without their vectors; these functions find both, so the next run ends as an uninterrupted
one would have.
"""

from __future__ import annotations

import logging

from footnote.ingest.language_vectors import LanguageVectors
from footnote.ingest.report import Progress, ProgressCallback
from footnote.models.base import Embedder
from footnote.store.catalog import Catalog
from footnote.store.vectors import Metadata, VectorIndex

log = logging.getLogger(__name__)


def reconcile(
    catalog: Catalog,
    vectors: VectorIndex,
    full: bool = False,
    language: LanguageVectors | None = None,
    batch_size: int = 32,
) -> None:
    """Drop vectors of chunks the catalog has deleted, from `language`'s index too.

    `full` also compares every id in the vector index with the catalog: vectors of
    chunks the catalog lacks (a run killed before its commit) are deleted, and chunks
    marked embedded whose vector is missing are marked pending, to be embedded again;
    `language`'s index is brought in line by its own `sync`.
    """
    tombstones = catalog.tombstones()
    if tombstones:
        vectors.delete(tombstones)
        if language is not None:
            language.vectors.delete(tombstones)
        catalog.clear_tombstones(tombstones)
    if not full:
        return
    if language is not None:
        language.sync(catalog, batch_size)
    # Chunks committed before the index is listed have their vectors in it, unless lost.
    listed_before = catalog.chunk_ids()
    in_index = vectors.ids()
    # Vectors in the index whose transaction is still open (another replica's ingest) are not
    # orphans: wait for it to end, then list the chunks it committed, if it did.
    settled = catalog.wait_for_writers()
    in_catalog = catalog.chunk_ids()
    orphaned = sorted(in_index.difference(in_catalog))
    if orphaned and settled:
        vectors.delete(orphaned)
    elif orphaned:
        log.warning(
            "left %d vectors without chunks in the index: a catalog write stayed open; "
            "the next start deletes them, or `footnote store check` lists them",
            len(orphaned),
        )
    lost = (i for i, embedded in listed_before.items() if embedded and i not in in_index)
    missing = sorted(i for i in lost if in_catalog.get(i))
    if missing:
        catalog.mark_pending(missing)


def embed_pending(
    catalog: Catalog,
    vectors: VectorIndex,
    embedder: Embedder,
    batch_size: int,
    progress: ProgressCallback | None = None,
    language: LanguageVectors | None = None,
) -> int:
    """Embed every chunk the vector index lacks (and `language`'s index, of those it holds);
    returns how many were embedded."""
    total = catalog.count_pending()
    done = 0
    while batch := catalog.pending_chunks(limit=max(batch_size * 8, 256)):
        texts = [c.embedding_text() for c in batch]
        embedded = embedder.embed_many(texts, batch_size)
        ids = [c.id for c in batch]
        metadata: list[Metadata] = [
            {"document_id": c.document_id, "format": c.format, "mtime": c.mtime} for c in batch
        ]
        vectors.upsert(ids, embedded, metadata)
        if language is not None:
            language.upsert(ids, language.embed([c.text for c in batch], texts, batch_size), metadata)
        catalog.mark_embedded(ids)
        done += len(batch)
        if progress:
            progress(Progress("embed", done, total))
    # Replaced chunks' vectors go only now, so a search meanwhile finds the old version.
    reconcile(catalog, vectors, language=language)
    return done
