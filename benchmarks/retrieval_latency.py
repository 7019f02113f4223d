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

With `--llamaindex-python PATH` (the python of a virtual environment holding
benchmarks/requirements-llamaindex.txt, never footnote's own), the same run then times the same
queries through LlamaIndex's hybrid retriever (BM25Retriever + Chroma + QueryFusionRetriever,
benchmarks/llamaindex_hybrid.py) as the reference, in a subprocess after footnote's side has
finished: same corpus, same embedder folder, chunks of the same size in the same tokens, lists
as deep as footnote's, as many results, each query embedded on one thread as footnote's is
(`--llamaindex-query-threads`; by torch in float32, not ONNX Runtime in int8). Its index is
built once in `--llamaindex-index-dir` (default: beside `--index-dir`) and reused; the seconds
the build took are reported. Both sides' nDCG@10 on the dataset's qrels is scored from the
rankings the timed searches returned (a document at its best chunk's rank).

    python benchmarks/retrieval_latency.py ../shared/data/scifact --index-dir /tmp/scifact-index
    python benchmarks/retrieval_latency.py ../shared/data/scifact --index-dir /tmp/scifact-index \
        --llamaindex-python /tmp/li-venv/bin/python
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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.document import Block, Chunk, Document
from footnote.core.span import Span
from footnote.core.stats import percentile
from footnote.evaluation.beir import BeirDataset, load_beir
from footnote.evaluation.metrics import mean_metrics
from footnote.evaluation.retrieval import PATH_PREFIX, corpus_documents
from footnote.ingest.pipeline import Ingestor
from footnote.models.cpu import machine
from footnote.models.registry import resolve_embedder
from footnote.retrieval.keyword import fts_query, keyword_phrases
from footnote.retrieval.retriever import RetrievalParams

RESULTS = Path(__file__).parent / "results"
LLAMAINDEX_SCRIPT = Path(__file__).with_name("llamaindex_hybrid.py")
LLAMAINDEX_VENV = (
    "python3.11 -m venv /tmp/li-venv && /tmp/li-venv/bin/pip install torch==2.13.0 && "
    "/tmp/li-venv/bin/pip install -r benchmarks/requirements-llamaindex.txt"
)
CHUNKS_PER_DOCUMENT = 10
WORDS_PER_CHUNK = 120
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}")


def summary(millis: list[float]) -> dict[str, float | None]:
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
            Chunk(i, b.text, Span(b.start, b.end), token_count=WORDS_PER_CHUNK)
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


def build_corpus(app: Application, dataset: BeirDataset, limit_docs: int | None) -> None:
    """Index the corpus (its first `limit_docs` documents), skipping what the index already holds."""
    s = app.settings
    ingestor = Ingestor(
        app.catalog, app.vectors, app.embedder, s.chunk_tokens, s.chunk_overlap, s.embed_batch_size
    )
    records = dataset.corpus() if limit_docs is None else islice(dataset.corpus(), limit_docs)
    ingestor.ingest_documents(corpus_documents(records), mtime=0.0)
    held = len(app.catalog.list_documents())
    if limit_docs is not None and held > limit_docs:
        raise SystemExit(
            f"{s.home} holds {held:,} documents, more than --limit-docs {limit_docs}; "
            "give the subset an --index-dir of its own"
        )


def llamaindex_reference(
    args: argparse.Namespace, settings: Settings, dataset: BeirDataset, params: RetrievalParams
) -> dict[str, Any]:
    """LlamaIndex's hybrid retriever on the same corpus and queries, in its own virtual environment."""
    folder = args.llamaindex_index_dir or args.index_dir.with_name(f"{args.index_dir.name}-llamaindex")
    with tempfile.TemporaryDirectory(prefix="footnote-llamaindex-") as scratch:
        queries, out = Path(scratch) / "queries.json", Path(scratch) / "result.json"
        queries.write_text(json.dumps([{"id": q, "text": t} for q, t in dataset.queries.items()]))
        command = [
            str(args.llamaindex_python),
            str(LLAMAINDEX_SCRIPT),
            str(dataset.corpus_path),
            *("--index-dir", str(folder), "--model", resolve_embedder(settings.embedder)),
            *("--queries", str(queries), "--out", str(out), "--warmup", str(args.warmup)),
            *("--chunk-tokens", str(settings.chunk_tokens), "--chunk-overlap", str(settings.chunk_overlap)),
            *("--keyword-candidates", str(params.keyword_candidates)),
            *("--dense-candidates", str(params.dense_candidates), "--limit", str(params.limit)),
            *("--embed-batch-size", str(settings.embed_batch_size)),
            *("--query-threads", str(args.llamaindex_query_threads)),
            *(("--limit-docs", str(args.limit_docs)) if args.limit_docs is not None else ()),
        ]
        offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
        print(f"LlamaIndex reference: index in {folder} (built once, then reused)", file=sys.stderr)
        done = subprocess.run(command, env={**os.environ, **offline}, stdout=sys.stderr, check=False)
        if done.returncode != 0:
            raise SystemExit(
                f"the LlamaIndex reference failed (exit {done.returncode}, its output is above): "
                f"{' '.join(command)}"
            )
        result = json.loads(out.read_text(encoding="utf-8"))
    millis, rankings, stages = result.pop("millis"), result.pop("rankings"), result.pop("stage_millis")
    return {
        "index_dir": str(folder),
        **result,
        **summary(millis),
        "ndcg_at_10": mean_metrics(rankings, dataset.qrels)["ndcg@10"],
        "stages": {name: summary(values) for name, values in stages.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--synthetic", type=int, default=0, help="build N synthetic chunks instead")
    parser.add_argument("--limit", type=int, default=10, help="results per query")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--limit-docs", type=int, help="index only the first N documents (a quick check)")
    parser.add_argument("--limit-queries", type=int, help="time only the first N judged queries")
    parser.add_argument(
        "--llamaindex-python",
        type=Path,
        help=f"python of a venv with LlamaIndex, for the reference rows; make one with: {LLAMAINDEX_VENV}",
    )
    parser.add_argument("--llamaindex-index-dir", type=Path, help="default: INDEX_DIR-llamaindex beside it")
    parser.add_argument(
        "--llamaindex-query-threads",
        type=int,
        default=1,
        help="torch threads LlamaIndex embeds a query on (footnote: one); 0: torch's default",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.synthetic and args.llamaindex_python:
        parser.error(
            "the LlamaIndex reference indexes the corpus itself; drop --synthetic or --llamaindex-python"
        )
    if args.llamaindex_python and not args.llamaindex_python.is_file():
        parser.error(
            f"--llamaindex-python {args.llamaindex_python} is not a file; make one with: {LLAMAINDEX_VENV}"
        )

    dataset = load_beir(args.dataset, limit_queries=args.limit_queries)
    # The usual model directory, so the embedder's one-off ONNX export is not made again per index.
    settings = Settings(home=args.index_dir, model_dir=Settings().model_cache)
    app = create_app(settings)
    if args.synthetic:
        build_synthetic(app, dataset, args.synthetic)
    else:
        build_corpus(app, dataset, args.limit_docs)
    started = time.perf_counter()
    app.keep_keyword_index(wait=True)
    build_seconds = time.perf_counter() - started
    retriever = app.retriever()
    memory = retriever.keyword_index
    if memory is None:
        raise SystemExit("the in-memory keyword index is off; set FOOTNOTE_KEYWORD_MEMORY=true to measure it")
    queries = list(dataset.queries.values())
    params = app.retrieval_params(args.limit, "hybrid")
    rankings: dict[str, list[str]] = {}

    def hybrid_search(text: str) -> None:
        hits = retriever.search(text, params)
        rankings[text] = list(dict.fromkeys(hit.path.removeprefix(PATH_PREFIX) for hit in hits))

    hybrid = timed(hybrid_search, queries, args.warmup)
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
        "documents": None if args.synthetic else len(app.catalog.list_documents()),
        "chunks": app.catalog.count_chunks(),
        "queries": len(queries),
        "timed_queries": len(hybrid),
        "keyword_memory_build_seconds": round(build_seconds, 2),
        "depths": {
            "keyword": params.keyword_candidates,
            "dense": params.dense_candidates,
            "limit": args.limit,
        },
        "machine": {**machine(), "platform": platform.platform(), "load": os.getloadavg()},
        **{name: summary(millis) for name, millis in stages.items()},
    }
    if not args.synthetic:
        run = {q: rankings.get(text, []) for q, text in dataset.queries.items()}
        report["hybrid"]["ndcg_at_10"] = mean_metrics(run, dataset.qrels)["ndcg@10"]
    parts = sum(report[name]["p50_ms"] for name in ("embed_query", "keyword", "vector"))
    report["hybrid_over_stage_sum_p50"] = report["hybrid"]["p50_ms"] / parts
    report["keyword_fts5_over_memory_p99"] = report["keyword_fts5"]["p99_ms"] / report["keyword"]["p99_ms"]
    app.close()
    if args.llamaindex_python:
        report["llamaindex"] = llamaindex_reference(args, settings, dataset, params)
        report["llamaindex_over_hybrid_p99"] = report["llamaindex"]["p99_ms"] / report["hybrid"]["p99_ms"]
        report["machine"]["load_after_llamaindex"] = os.getloadavg()
    elif not args.synthetic:
        print(
            f"LlamaIndex reference skipped: pass --llamaindex-python PATH, a venv's python; make one with: "
            f"{LLAMAINDEX_VENV}",
            file=sys.stderr,
        )
    RESULTS.mkdir(exist_ok=True)
    kind = "synthetic" if args.synthetic else dataset.name
    if args.limit_docs is not None:
        kind += f"-{args.limit_docs}docs"
    out = RESULTS / f"retrieval_latency-{kind}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print_report(report, list(stages), build_seconds, out)


def print_report(report: dict[str, Any], stages: list[str], build_seconds: float, out: Path) -> None:
    print(
        f"{report['dataset']} ({report['index']}, {report['chunks']:,} chunks), {report['queries']} queries "
        f"({report['timed_queries']} timed):"
    )
    for name in [*stages, *(["llamaindex"] if "llamaindex" in report else [])]:
        row = report[name]
        ndcg = f"  nDCG@10 {row['ndcg_at_10']:.4f}" if "ndcg_at_10" in row else ""
        print(
            f"  {name:12} p50 {row['p50_ms']:6.1f} ms  p90 {row['p90_ms']:6.1f} ms"
            f"  p99 {row['p99_ms']:6.1f} ms  mean {row['mean_ms']:6.1f} ms{ndcg}"
        )
    print(f"  hybrid p50 / sum of stage p50s: {report['hybrid_over_stage_sum_p50']:.2f}")
    print(
        f"  keyword: FTS5 p99 / in-memory postings p99: {report['keyword_fts5_over_memory_p99']:.1f}x "
        f"(postings built in {build_seconds:.1f} s)"
    )
    if "llamaindex" in report:
        li = report["llamaindex"]
        alone = ", ".join(f"{name} {row['p50_ms']:.1f}" for name, row in li["stages"].items())
        print(f"  LlamaIndex stages alone, p50 ms: {alone}")
        built = "reused" if li["reused_index"] else "built"
        print(
            f"  LlamaIndex p99 / footnote hybrid p99: {report['llamaindex_over_hybrid_p99']:.1f}x; its index "
            f"({li['nodes']:,} nodes) {built}: {li['build_seconds']:.1f} s to build"
        )
    print(f"  saved {out}")


if __name__ == "__main__":
    main()
