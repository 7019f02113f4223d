"""The optional second stage: the Reranker protocol, its wiring into retrieval and evaluation."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.core.document import Block, Document
from footnote.core.hits import SearchHit
from footnote.errors import ConfigError, ModelError
from footnote.evaluation.beir import load_beir
from footnote.evaluation.retrieval import RERANK_MODE, evaluate_retrieval, evaluation_params, index_dataset
from footnote.ingest.pipeline import Ingestor
from footnote.models.scoring import TokenScorer
from footnote.perplexity import scorer_opener
from footnote.retrieval.rerank import LlmReranker, Reranker, open_reranker
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.catalog import Catalog
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.fakes import HashingEmbedder, WordTokenizer
from tests.unit.test_evaluation_retrieval import write_beir

_WORD = re.compile(r"\w+")


class KeywordCountReranker(Reranker):
    """Scores a text by how often `word` occurs in it; records every call."""

    name = "keyword-count"

    def __init__(self, word: str) -> None:
        self.word = word
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        return [float(_WORD.findall(text.lower()).count(self.word)) for text in texts]


class ShortReranker(Reranker):
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [1.0]


def hit(chunk_id: int, text: str) -> SearchHit:
    return SearchHit(chunk_id, chunk_id, f"/doc/{chunk_id}", "t", text, 0, len(text), score=1.0 / chunk_id)


def test_rerank_sorts_the_head_and_keeps_the_tail_in_fused_order() -> None:
    hits = [hit(1, "tea"), hit(2, "lava lava"), hit(3, "tea"), hit(4, "lava"), hit(5, "lava lava lava")]
    reranker = KeywordCountReranker("lava")

    reranked = reranker.rerank("q", hits, candidates=4)

    assert [h.chunk_id for h in reranked] == [2, 4, 1, 3, 5]  # ties (1, 3) keep fused order
    assert [h.rerank_score for h in reranked] == [2.0, 1.0, 0.0, 0.0, None]
    assert [h.score for h in reranked] == [1 / 2, 1 / 4, 1, 1 / 3, 1 / 5]  # fused scores untouched
    assert reranker.calls == [("q", ["tea", "lava lava", "tea", "lava"])]


def test_a_reranker_returning_the_wrong_number_of_scores_is_an_error() -> None:
    with pytest.raises(ModelError, match="returned 1 scores for 2 passages"):
        ShortReranker().rerank("q", [hit(1, "a"), hit(2, "b")], candidates=5)


TEXTS = [
    "Volcanoes erupt lava and ash when magma rises.",
    "Tides rise twice a day; volcano islands see tides too.",
    "Lava lava lava: the volcano poured lava for weeks.",
    "Bees dance near the volcano to share where flowers are.",
]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Catalog, ChromaVectorIndex, HashingEmbedder]]:
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "vectors", embedder.name, embedder.dimension)
    ingestor = Ingestor(catalog, vectors, embedder)
    documents = [
        Document(f"/notes/{n}.txt", "text", f"Note {n}", text, [Block(text, 0, len(text))])
        for n, text in enumerate(TEXTS)
    ]
    ingestor.ingest_documents(documents, mtime=0.0)
    yield catalog, vectors, embedder
    catalog.close()


def test_the_retriever_reranks_its_candidates_then_cuts_to_the_limit(
    stores: tuple[Catalog, ChromaVectorIndex, HashingEmbedder],
) -> None:
    reranker = KeywordCountReranker("lava")
    retriever = HybridRetriever(*stores, reranker=reranker)
    plain = HybridRetriever(*stores).search("volcano", RetrievalParams(limit=4))
    assert len(plain) == 4

    reranked = retriever.search("volcano", RetrievalParams(limit=2, rerank_candidates=4))

    assert [h.path for h in reranked] == ["/notes/2.txt", "/notes/0.txt"]
    assert [h.rerank_score for h in reranked] == [4.0, 1.0]
    assert sorted(reranker.calls[0][1]) == sorted(TEXTS)  # all four candidates were scored, not two
    # Without candidates to rescore, the reranker is never called and the fused order stands.
    assert retriever.search("volcano", RetrievalParams(limit=4)) == plain
    assert len(reranker.calls) == 1


def test_the_evaluation_adds_a_rerank_row_only_when_asked(tmp_path: Path) -> None:
    dataset = load_beir(write_beir(tmp_path / "tiny"))
    catalog = SqliteCatalog(tmp_path / "home" / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "home" / "vectors", embedder.name, embedder.dimension)
    index_dataset(Ingestor(catalog, vectors, embedder), dataset)
    reranker = KeywordCountReranker("yeast")
    retriever = HybridRetriever(catalog, vectors, embedder, reranker=reranker)
    base = RetrievalParams(rerank_candidates=3)

    assert evaluation_params(base, "hybrid").rerank_candidates == 0
    assert evaluation_params(base, RERANK_MODE).mode == "hybrid"
    results = evaluate_retrieval(retriever, dataset, base, ["hybrid"])
    assert [r.mode for r in results] == ["hybrid"] and reranker.calls == []

    results = evaluate_retrieval(retriever, dataset, base, ["hybrid", RERANK_MODE])

    assert [r.mode for r in results] == ["hybrid", RERANK_MODE]
    assert len(reranker.calls) == len(dataset.queries)
    assert all(len(texts) <= 3 for _, texts in reranker.calls)
    catalog.close()


class CountingScorer(TokenScorer):
    """log P(token) = -1 / (number of windows seen so far); records every window."""

    name = "counting"
    context_length = 40

    def __init__(self) -> None:
        self.tokenizer = WordTokenizer()
        self.windows: list[tuple[list[int], int]] = []

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        self.windows.append((list(token_ids), first_scored))
        return [-1.0 / len(self.windows)] * (len(token_ids) - first_scored)


def test_the_llm_reranker_scores_the_yes_token_after_each_passage_within_the_window() -> None:
    scorer = CountingScorer()
    reranker = LlmReranker(scorer, max_query_tokens=3)
    yes = scorer.tokenizer.ids["Yes"]
    long_passage = " ".join(f"w{i}" for i in range(100))

    scores = reranker.score("which lava flows fastest today", ["short passage", long_passage])

    assert scores == [-1.0, -0.5]
    for window, first_scored in scorer.windows:
        assert window[0] == 0 and window[-1] == yes  # BOS first, " Yes" scored last
        assert first_scored == len(window) - 1
        assert len(window) <= scorer.context_length
    tokens = scorer.tokenizer.ids
    first = scorer.windows[0][0]
    assert [tokens["short"], tokens["passage"]] == first[first.index(tokens["short"]) :][:2]
    assert tokens["which"] in first and tokens["fastest"] not in first  # query cut to 3 tokens
    assert tokens["w0"] in scorer.windows[1][0] and tokens["w99"] not in scorer.windows[1][0]


def test_a_window_too_small_for_any_passage_is_a_clear_error() -> None:
    scorer = CountingScorer()
    scorer.context_length = 20
    with pytest.raises(ConfigError, match="leaves no room for a passage"):
        LlmReranker(scorer).score("q", ["text"])


def test_reranking_is_off_by_default_and_needs_a_model_for_the_cross_encoder(tmp_path: Path) -> None:
    assert open_reranker(Settings(home=tmp_path)) is None
    app = create_app(Settings(home=tmp_path), embedder=HashingEmbedder())
    assert app.retrieval_params(5).rerank_candidates == 0
    with pytest.raises(ConfigError, match="FOOTNOTE_RERANK_MODEL"):
        open_reranker(Settings(home=tmp_path, rerank="cross-encoder"))
    with pytest.raises(ModelError, match="could not be loaded"):
        open_reranker(Settings(home=tmp_path, rerank="cross-encoder", rerank_model=str(tmp_path / "none")))
    configured = create_app(Settings(home=tmp_path, rerank="llm", rerank_candidates=7))
    assert configured.retrieval_params(5).rerank_candidates == 7
    app.close()
    configured.close()


def test_the_llm_reranker_on_the_bundled_model_gives_log_probabilities(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, rerank="llm")
    reranker = open_reranker(settings, scorer_opener(settings))
    assert isinstance(reranker, LlmReranker)
    texts = ["Honeybees dance to show where flowers are.", "The Moon raises two tides a day."]
    try:
        scores = reranker.score("How do bees share where flowers are?", texts)
        assert len(scores) == 2
        assert all(math.isfinite(s) and s < 0 for s in scores)
        assert reranker.score("How do bees share where flowers are?", texts[:1]) == pytest.approx(scores[:1])
    finally:
        reranker.close()
