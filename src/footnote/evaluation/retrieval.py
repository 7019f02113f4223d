"""Retrieval evaluation: index a BEIR corpus in isolation, run every judged query, score the rankings.

Chunks are what footnote retrieves; a corpus document's rank is the rank of its
best chunk (max over its chunks), which is how passage hits are judged against
document-level qrels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from footnote.application import Application
from footnote.config import Settings
from footnote.core.document import Block, Document
from footnote.core.language import detect_language
from footnote.errors import FootnoteError
from footnote.evaluation.beir import BeirDataset, CorpusRecord
from footnote.evaluation.metrics import mean_metrics
from footnote.ingest.pipeline import Ingestor
from footnote.ingest.report import IngestReport, ProgressCallback
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.records import BM25_COLUMN_WEIGHTS

MODES = ("keyword", "dense", "hybrid")
RERANK_MODE = "rerank"  # hybrid followed by the configured second stage
EXPANDED_MODE = "expanded"  # hybrid with the configured query expansion
# Chunks fetched per query for every `depth` documents wanted: a document may have several chunks.
CHUNKS_PER_DOCUMENT = 3
PATH_PREFIX = "beir:"


@dataclass(frozen=True)
class ModeResult:
    mode: str
    ndcg_at_10: float
    mrr_at_10: float
    recall_at_10: float
    recall_at_100: float
    queries: int
    seconds: float
    # When the queries are in more than one language: the same metrics over each language's queries.
    by_language: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def queries_per_second(self) -> float:
        return self.queries / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, float | int | str]:
        return {**asdict(self), "queries_per_second": self.queries_per_second}


def corpus_documents(records: Iterator[CorpusRecord]) -> Iterator[Document]:
    """Documents built in memory from corpus records; the path carries the corpus id."""
    for record in records:
        text = record.text.strip() or record.title.strip() or record.id
        yield Document(
            path=f"{PATH_PREFIX}{record.id}",
            format="text",
            title=record.title.strip(),
            text=text,
            blocks=[Block(text, 0, len(text))],
        )


def index_dataset(
    ingestor: Ingestor, dataset: BeirDataset, progress: ProgressCallback | None = None
) -> IngestReport:
    return ingestor.ingest_documents(corpus_documents(dataset.corpus()), mtime=0.0, progress=progress)


def document_ranking(retriever: HybridRetriever, query: str, params: RetrievalParams) -> list[str]:
    """Corpus ids, best first, each at the rank of its best chunk."""
    if not query.strip():
        return []
    ids = [hit.path.removeprefix(PATH_PREFIX) for hit in retriever.search(query, params)]
    return list(dict.fromkeys(ids))


def evaluation_params(base: RetrievalParams, mode: str, depth: int = 100) -> RetrievalParams:
    """`base` with every candidate list deep enough to rank `depth` documents.

    Only the `rerank` mode keeps the second stage; it is hybrid retrieval with `base.rerank_candidates`
    of the fused hits rescored. Likewise only the `expanded` mode keeps `base.expansion`.
    """
    chunks = depth * CHUNKS_PER_DOCUMENT
    return replace(
        base,
        mode="hybrid" if mode in (RERANK_MODE, EXPANDED_MODE) else mode,
        expansion=base.expansion if mode == EXPANDED_MODE else 0.0,
        limit=chunks,
        keyword_candidates=max(base.keyword_candidates, chunks),
        dense_candidates=max(base.dense_candidates, chunks),
        rerank_candidates=base.rerank_candidates if mode == RERANK_MODE else 0,
    )


def evaluate_mode(
    retriever: HybridRetriever,
    dataset: BeirDataset,
    params: RetrievalParams,
    depth: int = 100,
    label: str | None = None,
) -> ModeResult:
    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    for query_id, text in dataset.queries.items():
        run[query_id] = document_ranking(retriever, text, params)[:depth]
    seconds = time.perf_counter() - started
    scores = mean_metrics(run, dataset.qrels)
    return ModeResult(
        label or params.mode,
        scores["ndcg@10"],
        scores["mrr@10"],
        scores["recall@10"],
        scores["recall@100"],
        len(dataset.queries),
        seconds,
        metrics_by_language(run, dataset),
    )


def metrics_by_language(run: dict[str, list[str]], dataset: BeirDataset) -> dict[str, dict[str, float]]:
    """Metrics over the queries of each language (by `detect_language`); empty for a one-language set."""
    groups: dict[str, list[str]] = {}
    for query_id, text in dataset.queries.items():
        groups.setdefault(detect_language(text) or "none", []).append(query_id)
    if len(groups) < 2:
        return {}
    return {
        language: {
            **mean_metrics({q: run.get(q, []) for q in ids}, {q: dataset.qrels[q] for q in ids}),
            "queries": len(ids),
        }
        for language, ids in sorted(groups.items())
    }


def evaluate_retrieval(
    retriever: HybridRetriever,
    dataset: BeirDataset,
    base: RetrievalParams,
    modes: Sequence[str] = MODES,
    depth: int = 100,
    on_mode: Callable[[ModeResult], None] | None = None,
) -> list[ModeResult]:
    results = []
    for mode in modes:
        result = evaluate_mode(retriever, dataset, evaluation_params(base, mode, depth), depth, mode)
        results.append(result)
        if on_mode:
            on_mode(result)
    return results


def chosen_modes(modes: Sequence[str] | None, settings: Settings) -> list[str]:
    """The modes to score: those asked for, else every one the settings allow (rerank with a
    reranker, expanded with query expansion); an unknown or unavailable mode is an error."""
    reranking, expanding = settings.rerank != "none", settings.query_expansion > 0
    optional = [*([RERANK_MODE] if reranking else []), *([EXPANDED_MODE] if expanding else [])]
    chosen = list(modes or [*MODES, *optional])
    unknown = [mode for mode in chosen if mode not in (*MODES, RERANK_MODE, EXPANDED_MODE)]
    if unknown:
        raise FootnoteError(f"unknown --mode '{unknown[0]}'; use keyword, dense, hybrid, rerank or expanded")
    if RERANK_MODE in chosen and not reranking:
        raise FootnoteError("--mode rerank needs a reranker: set FOOTNOTE_RERANK to cross-encoder or llm")
    if EXPANDED_MODE in chosen and not expanding:
        raise FootnoteError("--mode expanded needs FOOTNOTE_QUERY_EXPANSION above 0 (e.g. 0.3)")
    return chosen


def run_evaluation(
    app: Application,
    dataset: BeirDataset,
    modes: Sequence[str] = MODES,
    progress: ProgressCallback | None = None,
    on_mode: Callable[[ModeResult], None] | None = None,
) -> tuple[dict[str, Any], list[ModeResult]]:
    """Index `dataset` into `app` (incrementally) and score `modes`; a summary for `--json` too."""
    report = index_dataset(app.ingestor(), dataset, progress)
    app.keep_keyword_index(wait=True)
    retriever, base = app.retriever(), app.retrieval_params(10)
    results = evaluate_retrieval(retriever, dataset, base, modes, on_mode=on_mode)
    summary = {
        "dataset": dataset.name,
        "queries": len(dataset.queries),
        "ingest": report.summary(),
        "settings": _settings(app.settings, retriever, base),
        "results": [result.to_dict() for result in results],
    }
    return summary, results


def _settings(s: Settings, retriever: HybridRetriever, base: RetrievalParams) -> dict[str, Any]:
    """What the figures depend on, for the report."""
    return {
        "embedder": s.embedder,
        "embedder_identity": retriever.embedder.identity,
        "chunk_tokens": s.chunk_tokens,
        "chunk_overlap": s.chunk_overlap,
        "rrf_k": s.rrf_k,
        "rrf_keyword_weight": s.rrf_keyword_weight,
        "rrf_dense_weight": s.rrf_dense_weight,
        "rrf_unread_weight": s.rrf_unread_weight,
        "embedder_languages": sorted(retriever.dense_languages or []) or "every",
        # The embedder of the chunks and queries the embedder does not read (none: keywords alone).
        "language_embedder": retriever.language_dense[0].identity if retriever.language_dense else "none",
        "rrf_cross_language_weight": s.rrf_cross_language_weight,
        "rrf_language_weight": s.rrf_language_weight,
        "rrf_cross_language_keyword_weight": s.rrf_cross_language_keyword_weight,
        "bm25_column_weights": list(BM25_COLUMN_WEIGHTS),
        "candidate_chunks": evaluation_params(base, "hybrid").keyword_candidates,
        "rerank": s.rerank,
        "rerank_model": s.rerank_model,
        "rerank_candidates": s.rerank_candidates if s.rerank != "none" else 0,
        "query_expansion": s.query_expansion,
        **(
            {"rrf_signal_weights": dict(sorted(s.rrf_signal_weights.items()))} if s.rrf_signal_weights else {}
        ),
    }
