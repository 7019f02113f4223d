"""Per-retriever RRF weights flow from settings into the fused ranking."""

from __future__ import annotations

from pathlib import Path

from footnote.application import create_app
from footnote.config import Settings
from footnote.ingest.document import Block, Document
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.retriever import RetrievalParams
from tests.fakes import HashingEmbedder


def test_settings_weights_reach_the_retrieval_params(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", rrf_keyword_weight=1.5, rrf_dense_weight=0.5, rrf_k=20)
    app = create_app(settings, embedder=HashingEmbedder())
    try:
        params = app.retrieval_params(7, "hybrid")
    finally:
        app.close()

    assert (params.limit, params.rrf_k, params.keyword_weight, params.dense_weight) == (7, 20, 1.5, 0.5)


def test_a_zero_weight_leaves_the_other_retrievers_order(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "home"), embedder=HashingEmbedder())
    texts = ["tide tide tide moon", "moon moon tide harbour", "harbour wall lighthouse"]
    documents = [Document(f"/d/{n}.txt", "text", "", t, [Block(t, 0, len(t))]) for n, t in enumerate(texts)]
    Ingestor(app.catalog, app.vectors, app.embedder).ingest_documents(documents)
    retriever = app.retriever()
    try:
        for mode_weights, mode in (((1.0, 0.0), "keyword"), ((0.0, 1.0), "dense")):
            fused = RetrievalParams(limit=3, keyword_weight=mode_weights[0], dense_weight=mode_weights[1])
            single = RetrievalParams(limit=3, mode=mode)
            hybrid_order = [hit.path for hit in retriever.search("tide moon", fused)]
            single_order = [hit.path for hit in retriever.search("tide moon", single)]
            assert hybrid_order[: len(single_order)] == single_order
    finally:
        app.close()
