"""Does a second stage pay? nDCG@10 of hybrid against hybrid + rerank, query by query, with the cost.

Reuses the index of `footnote eval retrieval --index-dir DIR` (copy it first: this opens it
for reading but Chroma and SQLite may touch their files). For every judged query it ranks
documents with plain hybrid retrieval and with the configured reranker rescoring the first
`--candidates` fused chunks, times the rerank stage alone, and rewrites the JSON result after
each query, so a run cut short still leaves the figures of the queries it finished.

    python benchmarks/rerank_quality.py ../shared/data/scifact --index-dir /tmp/scifact_idx_rerank \\
        --rerank llm --candidates 10 --limit-queries 50
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.beir import load_beir
from footnote.evaluation.metrics import mean_metrics
from footnote.evaluation.retrieval import RERANK_MODE, document_ranking, evaluation_params

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--index-dir", type=Path, required=True, help="an index built by footnote eval")
    parser.add_argument("--rerank", choices=("llm", "cross-encoder"), default="llm")
    parser.add_argument("--rerank-model", default=None)
    parser.add_argument("--candidates", type=int, default=10, help="fused chunks the reranker rescores")
    parser.add_argument("--limit-queries", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="LLM threads (0: all cores)")
    args = parser.parse_args()

    dataset = load_beir(args.dataset, "test", args.limit_queries)
    settings = Settings(
        home=args.index_dir,
        rerank=args.rerank,
        rerank_model=args.rerank_model,
        rerank_candidates=args.candidates,
        threads=args.threads,
    )
    app = create_app(settings)
    retriever = app.retriever()
    reranker = retriever.reranker
    assert reranker is not None
    base = app.retrieval_params(10)
    hybrid_params = evaluation_params(base, "hybrid")
    rerank_params = evaluation_params(base, RERANK_MODE)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"rerank_quality-{time.strftime('%Y%m%d-%H%M%S')}.json"
    hybrid_run: dict[str, list[str]] = {}
    rerank_run: dict[str, list[str]] = {}
    hybrid_seconds: list[float] = []
    rerank_seconds: list[float] = []
    for number, (query_id, text) in enumerate(dataset.queries.items(), start=1):
        started = time.perf_counter()
        hybrid_run[query_id] = document_ranking(retriever, text, hybrid_params)[:100]
        hybrid_seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        rerank_run[query_id] = document_ranking(retriever, text, rerank_params)[:100]
        rerank_seconds.append(time.perf_counter() - started)
        judged = {q: dataset.qrels[q] for q in hybrid_run}
        hybrid_scores = mean_metrics(hybrid_run, judged)
        rerank_scores = mean_metrics(rerank_run, judged)
        report: dict[str, Any] = {
            "dataset": dataset.name,
            "queries_done": number,
            "queries_planned": len(dataset.queries),
            "reranker": reranker.name,
            "rerank": args.rerank,
            "candidates": args.candidates,
            "hybrid": {**hybrid_scores, "seconds_per_query": statistics.mean(hybrid_seconds)},
            "rerank_run": {**rerank_scores, "seconds_per_query": statistics.mean(rerank_seconds)},
            "rerank_seconds_per_passage": statistics.mean(rerank_seconds) / args.candidates,
            "machine": {"cpus": os.cpu_count(), "load": os.getloadavg(), "python": platform.python_version()},
        }
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(
            f"{number}/{len(dataset.queries)} hybrid nDCG@10 {hybrid_scores['ndcg@10']:.4f} "
            f"rerank nDCG@10 {rerank_scores['ndcg@10']:.4f} "
            f"rerank {statistics.mean(rerank_seconds):.2f} s/query",
            flush=True,
        )
    app.close()
    print(f"saved {out}")


if __name__ == "__main__":
    main()
