"""Hybrid retrieval: FTS5 keyword search and dense search, fused by RRF with any weighted signals
(`footnote.retrieval.signals`)."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from footnote import tracing
from footnote.core.filters import SearchFilter
from footnote.core.hits import SearchHit
from footnote.core.language import UNKNOWN, detect_language, reads, vote
from footnote.errors import QueryError
from footnote.models.base import Embedder, Vector
from footnote.retrieval.fusion import reciprocal_rank_fusion
from footnote.retrieval.keyword import fts_query, keyword_phrases
from footnote.retrieval.postings import MemoryKeywordIndex
from footnote.retrieval.rerank import Reranker
from footnote.retrieval.signals import SignalQuery, signal, signal_weights
from footnote.store.catalog import Catalog
from footnote.store.vectors import VectorIndex

if TYPE_CHECKING:
    from footnote.config import Settings

MAX_QUERY_CHARS = 4000
# A search that overlapped an ingest commit is run again, at most this many times.
CONSISTENT_READ_ATTEMPTS = 5


@dataclass(frozen=True)
class RetrievalParams:
    limit: int = 5
    keyword_candidates: int = 50
    dense_candidates: int = 50
    rrf_k: int = 60
    mode: str = "hybrid"  # hybrid | keyword | dense
    keyword_weight: float = 1.0
    dense_weight: float = 1.0
    # The share of its vote the dense list keeps on a query or chunk in a language its embedder
    # does not read (`benchmarks/retrieval_chinese.py` measures the curve).
    unread_weight: float = 0.0
    # The share of its vote the language embedder's list (chunks the embedder does not read) keeps
    # on a query the embedder reads: an English question over Chinese chunks; 0 leaves it unsearched.
    cross_language_weight: float = 0.0
    # The share of its vote the keyword list keeps, where the language embedder's list crosses
    # languages (`cross_language_weight` > 0), on chunks in a language the first embedder does not
    # read: an English question's words rarely name what a Chinese passage says.
    cross_language_keyword_weight: float = 1.0
    # The language embedder's list's vote on a query the first embedder does not read (a Chinese
    # question): it reads the question, where the keyword list matches its words alone.
    language_weight: float = 1.0
    # (name, weight) of each registered signal fused beside the keyword and dense lists.
    signals: tuple[tuple[str, float], ...] = ()
    filters: SearchFilter | None = None  # applied inside both retrievers
    rerank_candidates: int = 0  # fused hits the reranker rescores; 0 (or no reranker) skips the stage
    # Query expansion by pseudo-relevance feedback: the dense query moves this far towards the
    # mean vector of the best `feedback_hits` fused hits and is searched again; 0 turns it off.
    expansion: float = 0.0
    feedback_hits: int = 3

    @classmethod
    def from_settings(cls, s: Settings, limit: int, mode: str = "hybrid") -> RetrievalParams:
        """The parameters the settings give, for `limit` hits in `mode`."""
        return cls(
            limit,
            s.keyword_candidates,
            s.dense_candidates,
            s.rrf_k,
            mode,
            s.rrf_keyword_weight,
            s.rrf_dense_weight,
            unread_weight=s.rrf_unread_weight,
            cross_language_weight=s.rrf_cross_language_weight,
            cross_language_keyword_weight=s.rrf_cross_language_keyword_weight,
            language_weight=s.rrf_language_weight,
            signals=signal_weights(s.rrf_signal_weights),
            rerank_candidates=s.rerank_candidates if s.rerank != "none" else 0,
            expansion=s.query_expansion,
        )


@functools.cache
def _keyword_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="footnote-keyword-search")


class HybridRetriever:
    def __init__(
        self,
        catalog: Catalog,
        vectors: VectorIndex,
        embedder: Embedder,
        reranker: Reranker | None = None,
        keyword_index: MemoryKeywordIndex | None = None,
        dense_languages: Collection[str] | None = None,
        language_dense: tuple[Embedder, VectorIndex] | None = None,
    ) -> None:
        """`dense_languages`: the languages the embedder reads (None: every language);
        `language_dense`: the embedder of the chunks it does not read, and their index."""
        self.catalog = catalog
        self.vectors = vectors
        self.embedder = embedder
        self.reranker = reranker
        self.keyword_index = keyword_index
        self.dense_languages = dense_languages
        self.language_dense = language_dense

    def search(self, query: str, params: RetrievalParams | None = None) -> list[SearchHit]:
        params = params or RetrievalParams()
        query = query.strip()
        if not query:
            raise QueryError("the query is empty; type a question or some keywords")
        query = query[:MAX_QUERY_CHARS]
        filters = params.filters if params.filters is not None and params.filters.active else None
        rerank = params.rerank_candidates if self.reranker is not None else 0
        depth = max(params.limit, rerank)
        language = detect_language(query)
        language_share = self._language_share(params, language)
        wants_keyword, wants_dense = (
            params.mode in ("hybrid", "keyword"),
            self._searches_dense(params, language, language_share),
        )
        before = self.catalog.generation()
        # The keyword list is found on another thread while this one embeds the query.
        keyword_job = (
            _keyword_pool().submit(self._keyword, query, params.keyword_candidates, filters)
            if wants_keyword and wants_dense
            else None
        )
        query_vector = self.embedder.embed_query(query) if wants_dense else None
        language_query = self._language_query(query, language_share)
        if keyword_job is not None:
            keyword = keyword_job.result()
        else:
            keyword = self._keyword(query, params.keyword_candidates, filters) if wants_keyword else []
        for _ in range(CONSISTENT_READ_ATTEMPTS):
            dense = (
                self._dense(query_vector, params.dense_candidates, filters)
                if query_vector is not None
                else []
            )
            other = self._language_list(language_query, params.dense_candidates, filters)
            asked = SignalQuery(
                query, language, params.keyword_candidates, filters, self.catalog, query_vector
            )
            signals = self._signals(asked, params)
            fused = self._fuse(keyword, dense, params, language, (other, language_share), signals)
            if query_vector is not None and params.expansion > 0:
                expanded = self._expanded(query_vector, fused[: params.feedback_hits], params.expansion)
                if expanded is not None:
                    dense = self._dense(expanded, params.dense_candidates, filters)
                    fused = self._fuse(keyword, dense, params, language, (other, language_share), signals)
            hits = self._hits(fused[:depth], keyword, dense, other)
            # The catalog commits a changed file's new chunks while the vector index still holds
            # the old ones; a search that overlapped a commit may mix versions, so it runs again.
            after = self.catalog.generation()
            if after == before:
                break
            before = after
            keyword = self._keyword(query, params.keyword_candidates, filters) if wants_keyword else []
        if self.reranker is not None and rerank > 0:
            with tracing.span("rerank", candidates=rerank):
                hits = self.reranker.rerank(query, hits, rerank)
        return hits[: params.limit]

    def unknown_words(self, words: Sequence[str]) -> list[str]:
        """Those of `words` that no indexed chunk holds: the documents cannot answer about them."""
        if not self.catalog.searches_keywords:
            return self._postings().unknown_words(words)
        return self.catalog.unknown_words(words)

    def _postings(self) -> MemoryKeywordIndex:
        """The postings in memory a catalog without a keyword index of its own is searched with:
        the ones handed in, else built from the catalog here and kept following its changes."""
        if self.keyword_index is None:
            self.keyword_index = MemoryKeywordIndex(self.catalog)
            self.catalog.on_change(self.keyword_index.catch_up)
        return self.keyword_index

    def _searches_dense(self, params: RetrievalParams, language: str, language_share: float) -> bool:
        """Dense mode does, unless the language embedder's list takes a query the embedder does
        not read; in hybrid mode a dense list with no vote on the query is not searched."""
        if params.mode != "hybrid":
            return params.mode == "dense" and (language_share == 0 or reads(self.dense_languages, language))
        return params.unread_weight > 0 or reads(self.dense_languages, language)

    def _language_share(self, params: RetrievalParams, language: str) -> float:
        """The vote of the language embedder's list on a query in `language`: `language_weight`
        where the first embedder does not read it, `cross_language_weight` where it does; 0 leaves
        it unsearched."""
        if self.language_dense is None or params.mode == "keyword":
            return 0.0
        return (
            params.cross_language_weight if reads(self.dense_languages, language) else params.language_weight
        )

    def _language_query(self, query: str, share: float) -> Vector | None:
        """The query's vector by the language embedder, when its list has a vote and chunks."""
        if self.language_dense is None or share == 0:
            return None
        embedder, index = self.language_dense
        return embedder.embed_query(query) if index.count() else None

    def _language_list(
        self, query_vector: Vector | None, limit: int, filters: SearchFilter | None
    ) -> list[tuple[int, float]]:
        if query_vector is None or self.language_dense is None:
            return []
        return self._dense(query_vector, limit, filters, self.language_dense[1])

    def _fuse(
        self,
        keyword: list[tuple[int, float]],
        dense: list[tuple[int, float]],
        params: RetrievalParams,
        language: str,
        other: tuple[list[tuple[int, float]], float] = ([], 0.0),
        signals: Sequence[tuple[list[int], float]] = (),
    ) -> list[tuple[int, float]]:
        """RRF of the keyword list, the dense list, `other` (the language embedder's list with its
        share of the vote: it reads every language; `_language_share`) and each signal's list
        with its weight."""
        rankings = [[i for i, _ in keyword], [i for i, _ in dense], [i for i, _ in other[0]]]
        weights = [params.keyword_weight, params.dense_weight, params.dense_weight * other[1]]
        # Votes weigh the lists against each other: a dense search on its own keeps its order and scores.
        hybrid = params.mode == "hybrid"
        crossing = hybrid and bool(other[0]) and reads(self.dense_languages, language)
        votes = [
            self._keyword_votes(keyword, params.cross_language_keyword_weight) if crossing else {},
            self._dense_votes(dense, language, params.unread_weight) if hybrid else {},
            {},
        ]
        for ranking, weight in signals:
            rankings.append(ranking)
            weights.append(weight)
            votes.append({})
        return reciprocal_rank_fusion(rankings, k=params.rrf_k, weights=weights, votes=votes)

    def _signals(self, asked: SignalQuery, params: RetrievalParams) -> list[tuple[list[int], float]]:
        """The list of each signal with a weight, cut to `asked.limit`; a hybrid search's alone."""
        if params.mode != "hybrid":
            return []
        return [(signal(name)(asked)[: asked.limit], weight) for name, weight in params.signals if weight > 0]

    def _dense_votes(self, dense: list[tuple[int, float]], language: str, unread: float) -> dict[int, float]:
        """The dense list's vote on each of its chunks: full where the embedder reads the query's
        language and the chunk's, `unread` elsewhere (the keyword list reads every language)."""
        if self.dense_languages is None or not dense:
            return {}
        ids = [chunk_id for chunk_id, _ in dense]
        if not reads(self.dense_languages, language):
            return dict.fromkeys(ids, unread)
        languages = self.catalog.chunk_languages(ids)
        return {i: vote(self.dense_languages, language, languages.get(i, UNKNOWN), unread) for i in ids}

    def _keyword_votes(self, keyword: list[tuple[int, float]], share: float) -> dict[int, float]:
        """The keyword list's vote on each of its chunks when the question crosses languages: full on
        chunks the first embedder reads, `share` on the others (those the language embedder's list
        ranks)."""
        if share == 1.0 or not keyword:
            return {}
        ids = [chunk_id for chunk_id, _ in keyword]
        languages = self.catalog.chunk_languages(ids)
        return {i: 1.0 if reads(self.dense_languages, languages.get(i, UNKNOWN)) else share for i in ids}

    def _keyword(self, query: str, limit: int, filters: SearchFilter | None) -> list[tuple[int, float]]:
        if not self.catalog.searches_keywords:
            allowed = self.catalog.filtered_chunk_ids(filters) if filters is not None else None
            return self._postings().search_now(keyword_phrases(query), limit, allowed)
        if self.keyword_index is not None and filters is None:
            found = self.keyword_index.search(keyword_phrases(query), limit)
            if found is not None:
                return found
        return self.catalog.keyword_search(fts_query(query), limit, filters)

    def _expanded(
        self, query_vector: Vector, feedback: list[tuple[int, float]], weight: float
    ) -> Vector | None:
        """Rocchio's update: the query moved towards the mean of the feedback hits' vectors."""
        stored = list(self.vectors.vectors([chunk_id for chunk_id, _ in feedback]).values())
        if not stored:
            return None
        centroid = np.mean(np.asarray(stored, dtype=np.float64), axis=0)
        moved = (1.0 - weight) * np.asarray(query_vector, dtype=np.float64) + weight * centroid
        norm = float(np.linalg.norm(moved))
        return [float(x) for x in moved / norm] if norm > 0 else None

    def _dense(
        self,
        query_vector: Vector,
        limit: int,
        filters: SearchFilter | None,
        index: VectorIndex | None = None,
    ) -> list[tuple[int, float]]:
        """The nearest chunks in `index` (by default the embedder's)."""
        index = self.vectors if index is None else index
        if filters is None:
            return index.query(query_vector, limit)
        allowed = self.catalog.document_ids(filters) if filters.filters_paths else None
        if allowed == []:
            return []
        return index.query(query_vector, limit, filters.chroma_where(allowed))

    def _hits(
        self,
        fused: list[tuple[int, float]],
        keyword: list[tuple[int, float]],
        dense: list[tuple[int, float]],
        other: list[tuple[int, float]],
    ) -> list[SearchHit]:
        """The fused chunks as hits, with their ranks in the keyword and dense lists (the language
        embedder's list gives the dense rank of a chunk the first dense list did not find)."""
        records = self.catalog.chunks([chunk_id for chunk_id, _ in fused])
        keyword_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(keyword, start=1)}
        dense_at = {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(other, start=1)}
        dense_at |= {chunk_id: (rank, score) for rank, (chunk_id, score) in enumerate(dense, start=1)}
        hits = []
        for chunk_id, score in fused:
            record = records.get(chunk_id)
            if record is None:  # a vector whose chunk is gone: reconciled at the next ingest
                continue
            k_rank, k_score = keyword_at.get(chunk_id, (None, None))
            d_rank, d_score = dense_at.get(chunk_id, (None, None))
            hits.append(
                SearchHit(
                    chunk_id=record.id,
                    document_id=record.document_id,
                    path=record.path,
                    title=record.title,
                    text=record.text,
                    start=record.start,
                    end=record.end,
                    heading_path=record.heading_path,
                    page=record.page,
                    score=score,
                    keyword_rank=k_rank,
                    keyword_score=k_score,
                    dense_rank=d_rank,
                    dense_score=d_score,
                    url=record.url,
                    language=record.language,
                )
            )
        return hits
