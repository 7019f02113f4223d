"""The second dense index: chunks in languages the embedder does not read, embedded by one that does.

The default embedder (MiniLM) reads English only; its vectors of Chinese text are close to
random, so fusion gives them no vote. The language embedder (multilingual-e5-small) embeds
the chunks MiniLM cannot read into an index of their own, whose list votes for them. English
chunks are not embedded twice: e5 through its C engine embeds about 25 times more slowly.

The catalog marks a chunk embedded for the first index only; this one is kept in line by
comparing its ids with those of the catalog's chunks in the other languages (`sync`), once per
process like the first index's full reconciliation, and by the same tombstones.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from footnote.core.language import detect_language, reads
from footnote.models.base import Embedder, Vector
from footnote.store.catalog import Catalog
from footnote.store.vectors import Metadata, VectorIndex

log = logging.getLogger(__name__)
SYNC_BATCH = 512  # chunks read from the catalog at a time when looking for those lacking vectors


@dataclass
class LanguageVectors:
    embedder: Embedder
    vectors: VectorIndex
    main_languages: Collection[str] | None  # what the first index's embedder reads (None: all)

    def holds(self, text: str) -> bool:
        """Does a chunk of `text` belong here: is it in a language the first embedder does not read?"""
        return self.reads_not(detect_language(text))

    def reads_not(self, language: str) -> bool:
        """Is `language` one the first embedder does not read?"""
        return not reads(self.main_languages, language)

    def embed(
        self, chunk_texts: Sequence[str], embedding_texts: Sequence[str], batch_size: int
    ) -> dict[int, Vector]:
        """The vectors of the held ones among chunks (by their texts), by their position."""
        held = [i for i, text in enumerate(chunk_texts) if self.holds(text)]
        vectors = self.embedder.embed_many([embedding_texts[i] for i in held], batch_size) if held else []
        return dict(zip(held, vectors, strict=True))

    def upsert(self, ids: Sequence[int], vectors: dict[int, Vector], metadata: Sequence[Metadata]) -> None:
        """Store `vectors` (by position) under the chunk ids and metadata at those positions."""
        positions = sorted(vectors)
        self.vectors.upsert(
            [ids[i] for i in positions], [vectors[i] for i in positions], [metadata[i] for i in positions]
        )

    def sync(self, catalog: Catalog, batch_size: int) -> int:
        """Delete vectors of chunks the catalog lacks and embed held chunks that lack them;
        returns how many were embedded."""
        in_index = self.vectors.ids()
        settled = catalog.wait_for_writers()  # another replica's open write is not an orphan
        in_catalog = catalog.chunk_ids()
        orphaned = sorted(in_index.difference(in_catalog))
        if orphaned and settled:
            self.vectors.delete(orphaned)
        # A chunk still pending for the first index is embedded for both by `embed_pending`;
        # the catalog's language column spares reading the text of chunks the first index reads.
        held = catalog.embedded_languages()
        lacking = sorted(i for i, language in held.items() if i not in in_index and self.reads_not(language))
        embedded = 0
        for start in range(0, len(lacking), SYNC_BATCH):
            records = list(catalog.chunks(lacking[start : start + SYNC_BATCH]).values())
            vectors = self.embed([r.text for r in records], [r.embedding_text() for r in records], batch_size)
            metadata: list[Metadata] = [
                {"document_id": r.document_id, "format": r.format, "mtime": r.mtime} for r in records
            ]
            self.upsert([r.id for r in records], vectors, metadata)
            embedded += len(vectors)
        if embedded:
            log.info("embedded %d chunks for the language index", embedded)
        return embedded
