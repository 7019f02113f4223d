"""An English question over Chinese passages: the language embedder's list votes on them, and the
keyword list, which cannot read them for it, keeps only its cross-language share of a vote."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from footnote.core.document import Block, Document
from footnote.core.hits import SearchHit
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from tests.fakes import hashed_index

ENGLISH = ("/docs/tea.md", "Longjing is a green tea. Its leaves are pan-fired by hand.")
CHINESE = ("/docs/茶.md", "龙井茶（Longjing）是中国著名的绿茶，产于浙江杭州西湖一带，以色绿、香郁著称。")
RRF_K = RetrievalParams().rrf_k


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HybridRetriever]:
    index = hashed_index(tmp_path_factory.mktemp("votes"))
    for path, text in (ENGLISH, CHINESE):
        document = Document(path, "markdown", "", text, [Block(text, 0, len(text))])
        index.ingestor.ingest_documents([document], mtime=1.0)
    # The same vectors stand in for the language embedder's index: what is tested is the votes.
    embedder, vectors = index.embedder, index.vectors
    yield HybridRetriever(
        index.catalog,
        vectors,
        embedder,
        dense_languages=frozenset({"en"}),
        language_dense=(embedder, vectors),
    )
    index.catalog.close()


def chinese_hit(retriever: HybridRetriever, params: RetrievalParams) -> SearchHit:
    hits = retriever.search("Longjing tea", params)
    return next(hit for hit in hits if hit.path == CHINESE[0])


def test_the_keyword_list_keeps_its_share_on_a_chinese_passage(retriever: HybridRetriever) -> None:
    params = RetrievalParams(limit=5)
    assert params.cross_language_weight == 0.0  # the dataclass's own default: not crossing

    crossing = replace(params, cross_language_weight=1.0, cross_language_keyword_weight=0.0)
    voted = chinese_hit(retriever, crossing)
    # The keyword list found it (the Latin word), but only the language embedder's list votes on it.
    assert voted.keyword_rank is not None and voted.dense_rank is not None
    assert voted.score == pytest.approx(1.0 / (RRF_K + voted.dense_rank))

    full = chinese_hit(retriever, replace(crossing, cross_language_keyword_weight=1.0))
    assert full.score == pytest.approx(voted.score + 1.0 / (RRF_K + full.keyword_rank))


def test_the_english_passage_keeps_every_vote(retriever: HybridRetriever) -> None:
    crossing = RetrievalParams(limit=5, cross_language_weight=1.0, cross_language_keyword_weight=0.0)
    hits = retriever.search("Longjing tea", crossing)
    english = next(hit for hit in hits if hit.path == ENGLISH[0])
    assert english.keyword_rank is not None and hits[0].path == ENGLISH[0]
    assert english.score > 1.0 / (RRF_K + english.keyword_rank)


def test_the_language_list_weighs_its_own_question_by_the_language_weight(retriever: HybridRetriever) -> None:
    """A Chinese question, which the first embedder does not read: the language embedder's list
    votes with `language_weight` against the keyword list's one."""
    asked = "龙井茶 绿茶"
    plain = {hit.path: hit for hit in retriever.search(asked, RetrievalParams(limit=5))}[CHINESE[0]]
    weighed = {
        hit.path: hit for hit in retriever.search(asked, RetrievalParams(limit=5, language_weight=2.0))
    }[CHINESE[0]]
    assert plain.dense_rank is not None and plain.keyword_rank is not None
    keyword_vote = 1.0 / (RRF_K + plain.keyword_rank)
    assert plain.score == pytest.approx(keyword_vote + 1.0 / (RRF_K + plain.dense_rank))
    assert weighed.score == pytest.approx(keyword_vote + 2.0 / (RRF_K + weighed.dense_rank))
