"""Moving an embedded index into the shared stores, and checking that catalog and vectors agree.

`copy_index` copies documents and chunks under their own ids, so the vectors copied with
them (read back from the embedded index, never embedded again) still name their chunks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from footnote.core.vectors import Vector
from footnote.errors import StoreError
from footnote.store.catalog import Catalog
from footnote.store.chroma_server import ChromaServerVectorIndex
from footnote.store.postgres import PostgresCatalog
from footnote.store.records import ChunkRecord
from footnote.store.vectors import PARAMS_FILE, ChromaVectorIndex, Metadata, VectorIndex

BATCH = 500


@dataclass(frozen=True)
class CopyReport:
    documents: int
    chunks: int
    vectors: int
    keys: int = 0  # scoped API keys, copied by their hash
    language_vectors: int = 0  # of the second index, chunks in languages the embedder does not read


@dataclass(frozen=True)
class Drift:
    """How far the vector index is from the catalog."""

    chunks: int
    vectors: int
    pending: list[int]  # chunks waiting to be embedded
    chunks_without_vectors: list[int]  # marked embedded, yet the index lacks their vector
    vectors_without_chunks: list[int]  # vectors of chunks the catalog no longer has

    @property
    def in_step(self) -> bool:
        return not (self.chunks_without_vectors or self.vectors_without_chunks)


def recorded_embedder(vector_path: Path) -> tuple[str, int]:
    """(identity, dimension) of the embedder that built the embedded index at `vector_path`."""
    try:
        params = json.loads((vector_path / PARAMS_FILE).read_text(encoding="utf-8"))
        return str(params["embedder"]), int(params["dimension"])
    except (OSError, ValueError, KeyError) as exc:
        raise StoreError(
            f"no vector index at {vector_path} to copy ({exc}); run `footnote ingest` first"
        ) from None


def open_vectors_at(
    location: str,
    token: str | None,
    identity: str | None,
    dimension: int | None,
    collection: str = ChromaVectorIndex.collection_name,
) -> VectorIndex:
    """The vector index at `location`: `collection` on a Chroma server URL, or an embedded index's folder."""
    if location.startswith(("http://", "https://")):
        return ChromaServerVectorIndex(location, token, identity, dimension, collection=collection)
    return ChromaVectorIndex(Path(location), identity, dimension)


def copy_index(
    source: Catalog,
    target: PostgresCatalog,
    source_vectors: VectorIndex | None = None,
    target_vectors: VectorIndex | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CopyReport:
    """Copy every document and chunk (and, given both indexes, every vector) into empty shared
    stores, with the collections the documents belong to and the scoped API keys."""
    if target.count_chunks() or target.list_documents():
        raise StoreError(f"the catalog at {target.location} is not empty; copy into a new database")
    flags = source.chunk_ids()
    ids = sorted(flags)
    documents = source.list_documents()
    records: dict[int, list[ChunkRecord]] = {}
    vectors = 0
    for start in range(0, len(ids), BATCH):
        batch = source.chunks(ids[start : start + BATCH])
        for record in batch.values():
            records.setdefault(record.document_id, []).append(record)
        if source_vectors is not None and target_vectors is not None:
            found = source_vectors.vectors(list(batch))
            vectors += _copy_vectors(found, batch, target_vectors)
            for chunk_id in batch:
                flags[chunk_id] = flags[chunk_id] and chunk_id in found
        if progress:
            progress(min(start + BATCH, len(ids)), len(ids))
    for start in range(0, len(documents), BATCH):
        window = documents[start : start + BATCH]
        target.import_documents(
            [(d, source.document_text(d.id), records.get(d.id, [])) for d in window], flags
        )
    keys = source.keys()
    for key in keys:
        target.add_key(key)
    return CopyReport(len(documents), len(ids), vectors, len(keys))


def copy_vectors(source: Catalog, source_vectors: VectorIndex, target_vectors: VectorIndex) -> int:
    """Copy every vector of `source_vectors` (the second index: it holds some chunks only) whose
    chunk `source` holds; returns how many."""
    ids = sorted(source_vectors.ids())
    copied = 0
    for start in range(0, len(ids), BATCH):
        records = source.chunks(ids[start : start + BATCH])
        copied += _copy_vectors(source_vectors.vectors(sorted(records)), records, target_vectors)
    return copied


def _copy_vectors(found: dict[int, Vector], records: dict[int, ChunkRecord], target: VectorIndex) -> int:
    ids = sorted(found)
    metadata: list[Metadata] = [
        {"document_id": records[i].document_id, "format": records[i].format, "mtime": records[i].mtime}
        for i in ids
    ]
    target.upsert(ids, [found[i] for i in ids], metadata)
    return len(ids)


def drift(catalog: Catalog, vectors: VectorIndex) -> Drift:
    flags = catalog.chunk_ids()
    held = vectors.ids()
    return Drift(
        chunks=len(flags),
        vectors=len(held),
        pending=sorted(i for i, embedded in flags.items() if not embedded),
        chunks_without_vectors=sorted(i for i, embedded in flags.items() if embedded and i not in held),
        vectors_without_chunks=sorted(held.difference(flags)),
    )
