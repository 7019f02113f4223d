"""Metadata filters are applied inside the keyword and the dense retriever, not after them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from footnote.core.document import Block, Document
from footnote.core.filters import SearchFilter
from footnote.retrieval.keyword import fts_query
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.retrieval.source_filter import FilteredRetriever, SourceFilter
from tests.fakes import hashed_index

# Every document is about tides, so an unfiltered search finds them all.
DOCUMENTS = [
    ("/notes/2023/tides.md", "markdown", 1_000.0),
    ("/notes/2024/tides.md", "markdown", 2_000.0),
    ("/papers/tides.pdf", "pdf", 3_000.0),
    ("/papers/draft/tides.txt", "text", 4_000.0),
    ("/web/tides.html", "html", 5_000.0),
]
ALL = {path for path, _, _ in DOCUMENTS}


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HybridRetriever]:
    index = hashed_index(tmp_path_factory.mktemp("filters"))
    for path, kind, mtime in DOCUMENTS:
        text = f"Tides rise and fall twice a day. This note lives at {path}."
        document = Document(path, kind, "Tides", text, [Block(text, 0, len(text))])
        index.ingestor.ingest_documents([document], mtime=mtime)
    yield HybridRetriever(index.catalog, index.vectors, index.embedder)
    index.catalog.close()


CASES = [
    (SearchFilter(), ALL),
    (SearchFilter(include_paths=("/papers/*",)), {"/papers/tides.pdf", "/papers/draft/tides.txt"}),
    (SearchFilter(include_paths=("/notes/2023/*", "/web/*")), {"/notes/2023/tides.md", "/web/tides.html"}),
    (SearchFilter(exclude_paths=("/notes/*",)), ALL - {"/notes/2023/tides.md", "/notes/2024/tides.md"}),
    (SearchFilter(include_paths=("/papers/*",), exclude_paths=("*/draft/*",)), {"/papers/tides.pdf"}),
    (
        SearchFilter(formats=("markdown", "html")),
        {"/notes/2023/tides.md", "/notes/2024/tides.md", "/web/tides.html"},
    ),
    (
        SearchFilter(modified_after=2_000.0, modified_before=4_000.0),
        {"/notes/2024/tides.md", "/papers/tides.pdf"},
    ),
    (SearchFilter(formats=("pdf",), modified_after=3_500.0), set()),
    (SearchFilter(include_paths=("/nowhere/*",)), set()),
]


@pytest.mark.parametrize(("filters", "expected"), CASES)
@pytest.mark.parametrize("mode", ["keyword", "dense", "hybrid"])
def test_filters_keep_exactly_the_matching_documents(
    retriever: HybridRetriever, mode: str, filters: SearchFilter, expected: set[str]
) -> None:
    params = RetrievalParams(limit=20, mode=mode, filters=filters)

    found = {hit.path for hit in retriever.search("tides twice a day", params)}

    assert found == expected


def test_a_filtered_list_is_filled_from_inside_the_retriever(retriever: HybridRetriever) -> None:
    # With one candidate per list, filtering after retrieval would usually leave nothing.
    only = SearchFilter(include_paths=("/web/*",))
    params = RetrievalParams(limit=1, keyword_candidates=1, dense_candidates=1, filters=only)

    for mode in ("keyword", "dense"):
        hits = retriever.search("tides", replace(params, mode=mode))
        assert [hit.path for hit in hits] == ["/web/tides.html"]


def test_keyword_search_takes_the_filter_in_sql(retriever: HybridRetriever) -> None:
    catalog = retriever.catalog
    match = fts_query("tides")

    unfiltered = catalog.keyword_search(match, 10)
    filtered = catalog.keyword_search(match, 10, SearchFilter(formats=("pdf",)))

    assert len(unfiltered) == len(DOCUMENTS)
    assert [catalog.chunks([i])[i].path for i, _ in filtered] == ["/papers/tides.pdf"]


def test_vectors_carry_their_document_metadata(retriever: HybridRetriever) -> None:
    where = SearchFilter(formats=("text",)).chroma_where(None)
    vector = retriever.embedder.embed("tides")

    ids = [i for i, _ in retriever.vectors.query(vector, 10, where)]

    assert [retriever.catalog.chunks(ids)[i].path for i in ids] == ["/papers/draft/tides.txt"]


def test_an_inactive_filter_is_no_filter() -> None:
    assert not SearchFilter().active
    assert SearchFilter().sql() == ("1", [])
    assert SearchFilter().chroma_where(None) is None
    assert SearchFilter(modified_after=0.0).active


def test_a_request_filter_keeps_the_languages_its_retriever_reads(retriever: HybridRetriever) -> None:
    english = HybridRetriever(
        retriever.catalog,
        retriever.vectors,
        retriever.embedder,
        dense_languages=frozenset({"en"}),
        language_dense=(retriever.embedder, retriever.vectors),
    )
    filtered = FilteredRetriever(english, SourceFilter.parse(["papers"]))
    assert filtered.dense_languages == frozenset({"en"})
    assert filtered.language_dense == english.language_dense
    question = "When do tides rise?"
    params = RetrievalParams(limit=5, unread_weight=0.25)
    wanted = [hit.path for hit in english.search(question, params) if "papers" in hit.path]
    assert [hit.path for hit in filtered.search(question, params)] == wanted
