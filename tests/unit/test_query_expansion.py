"""Query expansion by pseudo-relevance feedback (Rocchio) on the dense query."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.document import Block, Document
from footnote.evaluation.retrieval import evaluation_params
from footnote.ingest.pipeline import Ingestor
from footnote.models.base import Vector
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.vectors import Metadata, VectorIndex
from tests.fakes import HashingEmbedder

TEXTS = [
    "tide tables for the harbour",
    "the moon pulls the tide",
    "harbour wall and lighthouse",
    "lighthouse keepers and lamps",
]


class RecordingIndex(VectorIndex):
    """The real index, with every query vector kept."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.queried: list[Vector] = []

    def upsert(
        self, ids: Sequence[int], vectors: Sequence[Vector], metadata: Sequence[Metadata] | None = None
    ) -> None:
        self.inner.upsert(ids, vectors, metadata)

    def query(
        self, vector: Vector, limit: int, where: dict[str, Any] | None = None
    ) -> list[tuple[int, float]]:
        self.queried.append(list(vector))
        return self.inner.query(vector, limit, where)

    def delete(self, ids: Sequence[int]) -> None:
        self.inner.delete(ids)

    def count(self) -> int:
        return self.inner.count()

    def ids(self) -> set[int]:
        return self.inner.ids()

    def vectors(self, ids: Sequence[int]) -> dict[int, Vector]:
        return self.inner.vectors(ids)


@pytest.fixture
def app(tmp_path: Path) -> Any:
    app = create_app(Settings(home=tmp_path / "home"), embedder=HashingEmbedder())
    documents = [Document(f"/d/{n}.txt", "text", "", t, [Block(t, 0, len(t))]) for n, t in enumerate(TEXTS)]
    Ingestor(app.catalog, app.vectors, app.embedder).ingest_documents(documents)
    yield app
    app.close()


def test_the_index_returns_the_stored_vectors_it_holds(app: Application) -> None:
    ids = sorted(app.vectors.ids())
    stored = app.vectors.vectors([*ids[:2], 999_999])
    assert sorted(stored) == ids[:2]
    for chunk_id, vector in stored.items():
        text = app.catalog.chunks([chunk_id])[chunk_id].text
        assert np.allclose(vector, app.embedder.embed(text), atol=1e-6)


def test_the_expanded_query_is_rocchios_update_towards_the_best_hits(app: Application) -> None:
    index = RecordingIndex(app.vectors)
    retriever = HybridRetriever(app.catalog, index, app.embedder)
    query = "harbour tide"
    first = retriever.search(query, RetrievalParams(limit=10))
    assert len(index.queried) == 1  # no expansion: one dense search
    feedback = [hit.chunk_id for hit in first[:2]]

    retriever.search(query, RetrievalParams(limit=10, expansion=0.25, feedback_hits=2))
    assert len(index.queried) == 3  # the original dense search, then the expanded one
    q = np.asarray(app.embedder.embed(query))
    centroid = np.mean([app.vectors.vectors([i])[i] for i in feedback], axis=0)
    expected = 0.75 * q + 0.25 * centroid
    assert np.allclose(index.queried[2], expected / np.linalg.norm(expected), atol=1e-6)


def test_expansion_flows_from_settings_and_only_the_expanded_evaluation_keeps_it(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "home", query_expansion=0.3), embedder=HashingEmbedder())
    try:
        params = app.retrieval_params(5)
    finally:
        app.close()
    assert params.expansion == 0.3
    assert evaluation_params(params, "expanded").expansion == 0.3
    assert evaluation_params(params, "expanded").mode == "hybrid"
    assert evaluation_params(params, "hybrid").expansion == 0.0
