"""Per-query latency of retrieval on a BEIR dataset: prints p50, p90, p99 and the mean.

Reuses (or builds) an index made by `footnote eval retrieval --index-dir DIR`;
times `search` exactly as `footnote search` runs it (settings' depths and weights).

    python benchmarks/retrieval_latency.py ../shared/data/scifact --index-dir /tmp/scifact-index
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.beir import load_beir
from footnote.evaluation.retrieval import index_dataset
from footnote.ingest.pipeline import Ingestor


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of `values`."""
    ordered = sorted(values)
    rank = min(max(1, math.ceil(fraction * len(ordered))), len(ordered))
    return ordered[rank - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "keyword", "dense"])
    parser.add_argument("--limit", type=int, default=10, help="results per query")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    dataset = load_beir(args.dataset)
    settings = Settings(home=args.index_dir)
    app = create_app(settings)
    s = settings
    ingestor = Ingestor(
        app.catalog, app.vectors, app.embedder, s.chunk_tokens, s.chunk_overlap, s.embed_batch_size
    )
    index_dataset(ingestor, dataset)
    retriever = app.retriever()
    params = app.retrieval_params(args.limit, args.mode)
    queries = list(dataset.queries.values())
    for text in queries[: args.warmup]:
        retriever.search(text, params)
    millis = []
    for text in queries:
        started = time.perf_counter()
        retriever.search(text, params)
        millis.append((time.perf_counter() - started) * 1000)
    report = {
        "dataset": dataset.name,
        "mode": args.mode,
        "queries": len(millis),
        "chunks": app.catalog.count_chunks(),
        "p50_ms": percentile(millis, 0.50),
        "p90_ms": percentile(millis, 0.90),
        "p99_ms": percentile(millis, 0.99),
        "mean_ms": statistics.fmean(millis),
    }
    app.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"{report['dataset']} {args.mode}: {report['queries']} queries over {report['chunks']} chunks; "
            f"p50 {report['p50_ms']:.1f} ms, p90 {report['p90_ms']:.1f} ms, "
            f"p99 {report['p99_ms']:.1f} ms, mean {report['mean_ms']:.1f} ms"
        )


if __name__ == "__main__":
    main()
