"""Per-retriever RRF weights flow from settings into the fused ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.document import Block, Document
from footnote.core.hits import SearchHit
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
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


MIXED = {
    "/d/panda-zh.txt": "大熊猫主要生活在四川的山区，以竹子为食，也吃 bamboo shoots。",
    "/d/tea-zh.txt": "龙井茶产自杭州西湖，是中国的绿茶。",
    "/d/panda-en.txt": "Giant pandas eat bamboo shoots in the mountains.",
    "/d/tea-en.txt": "Longjing green tea comes from Hangzhou.",
}


def _mixed_stores(tmp_path: Path) -> Application:
    app = create_app(Settings(home=tmp_path / "home"), embedder=HashingEmbedder())
    documents = [Document(p, "text", "", t, [Block(t, 0, len(t))]) for p, t in MIXED.items()]
    Ingestor(app.catalog, app.vectors, app.embedder).ingest_documents(documents)
    return app


def _keyword_share(hit: SearchHit, k: int = 60) -> float:
    return 1 / (k + hit.keyword_rank) if hit.keyword_rank is not None else 0.0


def test_an_embedder_that_cannot_read_the_query_has_no_vote(tmp_path: Path) -> None:
    app = _mixed_stores(tmp_path)
    english_only = HybridRetriever(app.catalog, app.vectors, app.embedder, dense_languages={"en"})
    every_language = HybridRetriever(app.catalog, app.vectors, app.embedder)
    params = RetrievalParams(limit=4)
    try:
        hits = english_only.search("大熊猫吃竹子", params)
        keyword = english_only.search("大熊猫吃竹子", RetrievalParams(limit=4, mode="keyword"))
        voted = every_language.search("大熊猫吃竹子", params)
    finally:
        app.close()

    assert [h.path for h in hits[: len(keyword)]] == [h.path for h in keyword]
    assert all(h.score == pytest.approx(_keyword_share(h)) for h in hits)
    assert any(h.dense_rank is not None and h.score > _keyword_share(h) for h in voted)


def test_an_english_query_gives_no_dense_vote_to_chinese_chunks(tmp_path: Path) -> None:
    app = _mixed_stores(tmp_path)
    english_only = HybridRetriever(app.catalog, app.vectors, app.embedder, dense_languages={"en"})
    try:
        hits = english_only.search("bamboo shoots", RetrievalParams(limit=4))
    finally:
        app.close()

    by_path = {h.path: h for h in hits}
    chinese = by_path["/d/panda-zh.txt"]
    assert chinese.dense_rank is not None  # found by the dense list, which may not vote on it
    assert chinese.score == pytest.approx(_keyword_share(chinese))
    english = by_path["/d/panda-en.txt"]
    assert english.score == pytest.approx(_keyword_share(english) + 1 / (60 + english.dense_rank))
    assert hits[0].path == "/d/panda-en.txt"


def test_the_application_tells_the_retriever_what_its_embedder_reads(tmp_path: Path) -> None:
    bundled = create_app(Settings(home=tmp_path / "a"), embedder=HashingEmbedder())
    told = create_app(
        Settings(home=tmp_path / "b", embedder_languages=["en", "zh"]), embedder=HashingEmbedder()
    )
    try:
        assert bundled.retriever().dense_languages == frozenset({"en"})
        assert told.retriever().dense_languages == frozenset({"en", "zh"})
        assert bundled.retrieval_params(5).unread_weight == 0.0
    finally:
        bundled.close()
        told.close()
