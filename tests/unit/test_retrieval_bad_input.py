"""Hostile or odd queries go through the whole retriever, in every mode, without an error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.core.document import Block, Document
from footnote.errors import QueryError
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.fakes import HashingEmbedder

TEXT = 'The lighthouse stands NEAR the harbour; "quoted" words, a star * and a minus - sign. 灯塔在港口附近。'


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HybridRetriever]:
    home: Path = tmp_path_factory.mktemp("bad-input")
    catalog = SqliteCatalog(home / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(home / "vectors", embedder.name, embedder.dimension)
    document = Document("/docs/light.txt", "text", "Lighthouse", TEXT, [Block(TEXT, 0, len(TEXT))])
    Ingestor(catalog, vectors, embedder).ingest_documents([document])
    yield HybridRetriever(catalog, vectors, embedder)
    catalog.close()


QUERIES = [
    '"lighthouse',
    'harbour"',
    "NEAR(lighthouse harbour, 2)",
    "lighthouse*",
    "-harbour",
    "lighthouse AND OR NOT",
    "text:harbour grams:灯塔",
    " ".join(f"word{i}" for i in range(10_000)),
    "lighthouse " * 10_000,
    "ᚠᚢᚦᚨᚱᚲ ꦲꦏ꧀ꦱꦫ 𓀀𓀁",  # runic, Javanese, hieroglyphs: scripts nothing was indexed in
    "!!! ??? ... *** ---",
    "\u0000\u200b\ufeff lighthouse",
]


@pytest.mark.parametrize("mode", ["keyword", "dense", "hybrid"])
@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_never_raises(retriever: HybridRetriever, mode: str, query: str) -> None:
    hits = retriever.search(query, RetrievalParams(limit=5, mode=mode))

    assert all(hit.path == "/docs/light.txt" for hit in hits)


def test_operator_words_are_found_literally(retriever: HybridRetriever) -> None:
    for query in ('"lighthouse', "NEAR", "-harbour", "灯塔"):
        hits = retriever.search(query, RetrievalParams(limit=5, mode="keyword"))
        assert [hit.path for hit in hits] == ["/docs/light.txt"], query


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_an_empty_query_is_a_clear_query_error(retriever: HybridRetriever, query: str) -> None:
    with pytest.raises(QueryError, match="empty"):
        retriever.search(query)
