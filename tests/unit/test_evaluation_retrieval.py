"""The retrieval evaluation harness on a tiny BEIR folder, with the hashing embedder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.evaluation.beir import DatasetError, load_beir
from footnote.evaluation.retrieval import (
    MODES,
    document_ranking,
    evaluate_retrieval,
    evaluation_params,
    index_dataset,
)
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.fakes import HashingEmbedder

CORPUS = [
    {
        "_id": "glacier",
        "title": "Glaciers",
        "text": "A glacier is dense ice that moves under its own weight.",
    },
    {"_id": "comet", "title": "Comets", "text": "Comets are icy bodies that release gas near the Sun."},
    {"_id": "bread", "title": "Sourdough", "text": "A sourdough starter is a culture of wild yeast."},
    {"_id": "apple", "title": "Orchards", "text": "Apple trees need a cold winter to set fruit."},
    {"_id": "empty", "title": "Only a title about volcanoes", "text": ""},
]
QUERIES = [
    {"_id": "q1", "text": "moving ice glacier"},
    {"_id": "q2", "text": "wild yeast starter"},
    {"_id": "q3", "text": "volcanoes"},
    {"_id": "q4", "text": "not judged, never run"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\tglacier\t1\nq2\tbread\t1\nq3\tempty\t1\n"


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in CORPUS) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in QUERIES) + "\n")
    (folder / "qrels" / "test.tsv").write_text(QRELS)
    return folder


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny")


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Ingestor, HybridRetriever]]:
    catalog = SqliteCatalog(tmp_path / "home" / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "home" / "vectors", embedder.name, embedder.dimension)
    yield Ingestor(catalog, vectors, embedder), HybridRetriever(catalog, vectors, embedder)
    catalog.close()


def test_loads_judged_queries_only(dataset_dir: Path) -> None:
    dataset = load_beir(dataset_dir)

    assert list(dataset.queries) == ["q1", "q2", "q3"]
    assert dataset.qrels == {"q1": {"glacier": 1}, "q2": {"bread": 1}, "q3": {"empty": 1}}
    assert [record.id for record in dataset.corpus()] == [r["_id"] for r in CORPUS]
    assert list(load_beir(dataset_dir, limit_queries=2).queries) == ["q1", "q2"]


def test_a_folder_without_qrels_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"corpus\.jsonl is missing"):
        load_beir(tmp_path)


def test_the_corpus_is_indexed_in_memory_and_incrementally(
    dataset_dir: Path, stores: tuple[Ingestor, HybridRetriever]
) -> None:
    ingestor, _ = stores
    dataset = load_beir(dataset_dir)

    first = index_dataset(ingestor, dataset)
    second = index_dataset(ingestor, dataset)

    assert first.count("new") == len(CORPUS) and not first.failed
    assert first.chunks_embedded == ingestor.catalog.count_chunks() == ingestor.vectors.count()
    assert second.count("unchanged") == len(CORPUS) and second.chunks_embedded == 0
    assert ingestor.catalog.document_by_path("beir:glacier") is not None


def test_hits_map_back_to_corpus_ids_once_each(
    dataset_dir: Path, stores: tuple[Ingestor, HybridRetriever]
) -> None:
    ingestor, retriever = stores
    index_dataset(ingestor, load_beir(dataset_dir))

    ranking = document_ranking(retriever, "glacier ice", evaluation_params(RetrievalParams(), "hybrid"))

    assert ranking[0] == "glacier"
    assert len(ranking) == len(set(ranking))
    assert set(ranking) <= {r["_id"] for r in CORPUS}


def test_every_mode_is_scored(dataset_dir: Path, stores: tuple[Ingestor, HybridRetriever]) -> None:
    ingestor, retriever = stores
    dataset = load_beir(dataset_dir)
    index_dataset(ingestor, dataset)
    seen: list[str] = []

    results = evaluate_retrieval(retriever, dataset, RetrievalParams(), on_mode=lambda r: seen.append(r.mode))

    assert [r.mode for r in results] == seen == list(MODES)
    keyword = results[0]
    assert keyword.ndcg_at_10 == pytest.approx(1.0) and keyword.mrr_at_10 == pytest.approx(1.0)
    for result in results:
        assert result.queries == 3
        assert 0.0 < result.ndcg_at_10 <= 1.0 and result.recall_at_100 == pytest.approx(1.0)
        assert result.queries_per_second > 0
        assert set(result.to_dict()) >= {"ndcg_at_10", "mrr_at_10", "recall_at_10", "recall_at_100"}


def test_evaluation_lists_are_deep_enough_for_recall_at_100() -> None:
    params = evaluation_params(RetrievalParams(keyword_candidates=50, dense_candidates=500), "dense")

    assert params.mode == "dense" and params.limit >= 100
    assert params.keyword_candidates >= 100 and params.dense_candidates == 500


def test_a_mixed_language_set_is_also_scored_per_language(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "mixed")
    with (folder / "corpus.jsonl").open("a") as corpus:
        corpus.write(json.dumps({"_id": "panda", "title": "", "text": "大熊猫以竹子为食。"}) + "\n")
        corpus.write(json.dumps({"_id": "tea", "title": "", "text": "龙井茶产自杭州。"}) + "\n")
    with (folder / "queries.jsonl").open("a") as queries:
        queries.write(json.dumps({"_id": "z1", "text": "大熊猫吃什么"}, ensure_ascii=False) + "\n")
        queries.write(json.dumps({"_id": "z2", "text": "西湖的茶"}, ensure_ascii=False) + "\n")
    with (folder / "qrels" / "test.tsv").open("a") as qrels:
        qrels.write("z1\tpanda\t1\nz2\tbread\t1\n")  # z2 is judged against a passage it cannot find
    catalog = SqliteCatalog(tmp_path / "home" / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "home" / "vectors", embedder.name, embedder.dimension)
    dataset = load_beir(folder)
    index_dataset(Ingestor(catalog, vectors, embedder), dataset)
    try:
        (keyword,) = evaluate_retrieval(
            HybridRetriever(catalog, vectors, embedder), dataset, RetrievalParams(), ["keyword"]
        )
    finally:
        catalog.close()

    assert set(keyword.by_language) == {"en", "zh"}
    assert keyword.by_language["en"]["queries"] == 3 and keyword.by_language["zh"]["queries"] == 2
    assert keyword.by_language["en"]["ndcg@10"] == pytest.approx(1.0)
    assert keyword.by_language["zh"]["ndcg@10"] == pytest.approx(0.5)  # z1 found first, z2 never
    assert keyword.ndcg_at_10 == pytest.approx((3 + 1 + 0) / 5)


def test_a_one_language_set_has_no_per_language_figures(
    dataset_dir: Path, stores: tuple[Ingestor, HybridRetriever]
) -> None:
    ingestor, retriever = stores
    dataset = load_beir(dataset_dir)
    index_dataset(ingestor, dataset)

    (keyword,) = evaluate_retrieval(retriever, dataset, RetrievalParams(), ["keyword"])

    assert keyword.by_language == {}
