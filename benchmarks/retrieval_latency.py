"""Per-query retrieval latency: p50/p90/p99 of hybrid search, with each stage timed alone.

Two indexes:
- a BEIR dataset (reuses or builds the index of `footnote eval retrieval --index-dir DIR`);
- `--synthetic N`: N chunks of Zipf-distributed words from the dataset's vocabulary with
  random unit vectors (the dense list's cost depends on the index size, not on what the
  vectors mean), so a 100,000-chunk index builds in minutes without embedding 100,000 texts.

The dataset's real queries are embedded by the real embedder in both cases. In the same
run, the stages are timed one by one (query embedding, keyword search from the in-memory
postings, vector search) as the baseline: hybrid's overhead is its p50 over the sum of the
stage p50s (the query is embedded while the keyword list is found, so it can be below 1).
The same keyword searches through FTS5's own bm25() are timed as the postings' baseline.
The vector stage searches with each query's own vector, embedded before it is timed; the
embedding stage runs on an embedder of its own, as hybrid search has already embedded (and
kept) the queries in the application's.

    python benchmarks/retrieval_latency.py ../shared/data/scifact --index-dir /tmp/scifact-index
    python benchmarks/retrieval_latency.py ../shared/data/scifact --index-dir /tmp/synth --synthetic 100000
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import platform
import random
import re
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.evaluation.beir import BeirDataset, load_beir
from footnote.evaluation.retrieval import index_dataset
from footnote.ingest.document import Block, Chunk, Document
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.keyword import fts_query, keyword_phrases

RESULTS = Path(__file__).parent / "results"
CHUNKS_PER_DOCUMENT = 10
WORDS_PER_CHUNK = 120
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}")


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of `values`."""
    ordered = sorted(values)
    rank = min(max(1, math.ceil(fraction * len(ordered))), len(ordered))
    return ordered[rank - 1]


def summary(millis: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(millis, 0.50),
        "p90_ms": percentile(millis, 0.90),
        "p99_ms": percentile(millis, 0.99),
        "mean_ms": statistics.fmean(millis),
    }


def timed(function: Callable[[str], Any], queries: list[str], warmup: int) -> list[float]:
    """Milliseconds per query after `warmup` queries; no query is timed twice (nothing cached)."""
    for text in queries[:warmup]:
        function(text)
    millis = []
    for text in queries[warmup:]:
        started = time.perf_counter()
        function(text)
        millis.append((time.perf_counter() - started) * 1000)
    return millis


def synthetic_documents(dataset: BeirDataset, chunks: int, seed: int = 7) -> Iterator[Document]:
    """Documents of CHUNKS_PER_DOCUMENT chunks each, words drawn by their corpus frequency."""
    counts = collections.Counter(w.lower() for r in dataset.corpus() for w in _WORD.findall(r.text))
    words, weights = zip(*counts.most_common(), strict=True)
    rng = random.Random(seed)
    for number in range(math.ceil(chunks / CHUNKS_PER_DOCUMENT)):
        blocks, parts, offset = [], [], 0
        for _ in range(CHUNKS_PER_DOCUMENT):
            text = " ".join(rng.choices(words, weights, k=WORDS_PER_CHUNK)) + "."
            blocks.append(Block(text, offset, offset + len(text)))
            parts.append(text)
            offset += len(text) + 2
        yield Document(f"synthetic:{number}", "text", f"Synthetic {number}", "\n\n".join(parts), blocks)


def build_synthetic(app: Application, dataset: BeirDataset, chunks: int) -> None:
    if app.catalog.count_chunks() >= chunks:
        return
    started = time.perf_counter()
    for document in synthetic_documents(dataset, chunks):
        pieces = [
            Chunk(i, b.text, b.start, b.end, token_count=WORDS_PER_CHUNK)
            for i, b in enumerate(document.blocks)
        ]
        app.catalog.replace_document(document, document.path, len(document.text), 0.0, pieces)
    rng = np.random.default_rng(7)
    dimension = app.embedder.dimension
    while batch := app.catalog.pending_chunks(limit=5000):
        vectors = rng.standard_normal((len(batch), dimension), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = [c.id for c in batch]
        meta: list[dict[str, str | int | float]] = [
            {"document_id": c.document_id, "format": c.format, "mtime": c.mtime} for c in batch
        ]
        app.vectors.upsert(ids, vectors.tolist(), meta)
        app.catalog.mark_embedded(ids)
    print(f"built {app.catalog.count_chunks():,} synthetic chunks in {time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--synthetic", type=int, default=0, help="build N synthetic chunks instead")
    parser.add_argument("--limit", type=int, default=10, help="results per query")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    dataset = load_beir(args.dataset)
    settings = Settings(home=args.index_dir)
    app = create_app(settings)
    if args.synthetic:
        build_synthetic(app, dataset, args.synthetic)
    else:
        s = settings
        ingestor = Ingestor(
            app.catalog, app.vectors, app.embedder, s.chunk_tokens, s.chunk_overlap, s.embed_batch_size
        )
        index_dataset(ingestor, dataset)
    started = time.perf_counter()
    app.keep_keyword_index(wait=True)
    build_seconds = time.perf_counter() - started
    retriever = app.retriever()
    memory = retriever.keyword_index
    if memory is None:
        raise SystemExit("the in-memory keyword index is off; set FOOTNOTE_KEYWORD_MEMORY=true to measure it")
    queries = list(dataset.queries.values())
    params = app.retrieval_params(args.limit, "hybrid")
    hybrid = timed(lambda q: retriever.search(q, params), queries, args.warmup)
    # Straight through the model: `embed` would answer from the vectors hybrid search kept.
    vectors = {q: app.embedder.embed_batch([q])[0] for q in queries}
    unwarmed = create_app(settings)
    stages = {
        "hybrid": hybrid,
        "embed_query": timed(unwarmed.embedder.embed, queries, args.warmup),
        "keyword": timed(
            lambda q: memory.search(keyword_phrases(q), params.keyword_candidates), queries, args.warmup
        ),
        "keyword_fts5": timed(
            lambda q: app.catalog.keyword_search(fts_query(q), params.keyword_candidates),
            queries,
            args.warmup,
        ),
        "vector": timed(
            lambda q: app.vectors.query(vectors[q], params.dense_candidates), queries, args.warmup
        ),
    }
    unwarmed.close()
    report: dict[str, Any] = {
        "dataset": dataset.name,
        "index": f"synthetic {args.synthetic:,} chunks" if args.synthetic else "corpus",
        "chunks": app.catalog.count_chunks(),
        "queries": len(queries),
        "keyword_memory_build_seconds": round(build_seconds, 2),
        "depths": {"keyword": params.keyword_candidates, "dense": params.dense_candidates},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()},
        **{name: summary(millis) for name, millis in stages.items()},
    }
    parts = sum(report[name]["p50_ms"] for name in ("embed_query", "keyword", "vector"))
    report["hybrid_over_stage_sum_p50"] = report["hybrid"]["p50_ms"] / parts
    report["keyword_fts5_over_memory_p99"] = report["keyword_fts5"]["p99_ms"] / report["keyword"]["p99_ms"]
    app.close()
    RESULTS.mkdir(exist_ok=True)
    kind = "synthetic" if args.synthetic else dataset.name
    out = RESULTS / f"retrieval_latency-{kind}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['dataset']} ({report['index']}, {report['chunks']:,} chunks), {len(queries)} queries:")
    for name in stages:
        row = report[name]
        print(
            f"  {name:12} p50 {row['p50_ms']:6.1f} ms  p90 {row['p90_ms']:6.1f} ms"
            f"  p99 {row['p99_ms']:6.1f} ms"
        )
    print(f"  hybrid p50 / sum of stage p50s: {report['hybrid_over_stage_sum_p50']:.2f}")
    print(
        f"  keyword: FTS5 p99 / in-memory postings p99: {report['keyword_fts5_over_memory_p99']:.1f}x "
        f"(postings built in {build_seconds:.1f} s); saved {out}"
    )


if __name__ == "__main__":
    main()
