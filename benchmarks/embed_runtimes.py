"""Embedding speed of each runtime and precision on this CPU: what `FOOTNOTE_EMBED_*=auto` picks by.

Embeds the first N SciFact abstracts (title and text, truncated at the model's window as an
ingest's chunks are) with the bundled MiniLM four ways in one run: sentence-transformers in
float32 (the plain encode), the same in bfloat16 (torch autocast), and the ONNX export in
float32 and int8. Then times single queries through the ONNX export on one and two threads.
Prints and saves tokens/s, the ratio to torch float32, the lowest cosine to the float32 vectors,
and query p50/p99, with the CPU's flags, under benchmarks/results/.

    python benchmarks/embed_runtimes.py ../shared/data/scifact [--limit 600]

On a CPU with AMX, `--withhold-amx` refuses the process the AMX tiles (torch's oneDNN and ONNX
Runtime's kernels both take their AVX-512 paths), standing in for a CPU with AVX512_BF16 and no
AMX; `ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16` caps torch's kernels alone. Either is recorded with
the machine.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from footnote.application import create_app
from footnote.bench.amx import corpus_arguments
from footnote.config import Settings
from footnote.models.cpu import machine
from footnote.models.onnx_export import embedder_session
from footnote.models.registry import resolve_embedder

RESULTS = Path(__file__).resolve().parent / "results"


def _timed(embed: Any, texts: list[str]) -> tuple[float, np.ndarray]:
    embed(texts[:16])  # first-call costs stay out of the timing
    started = time.perf_counter()
    vectors = np.asarray(embed(texts), dtype=np.float32)
    return time.perf_counter() - started, vectors


def main() -> None:
    args, amx_label = corpus_arguments(__doc__, limit=600)
    import torch
    from sentence_transformers import SentenceTransformer

    rows = [json.loads(line) for line in (args.dataset / "corpus.jsonl").open(encoding="utf-8")][: args.limit]
    texts = [f"{row.get('title', '')}\n{row['text']}" for row in rows]
    torch.set_num_threads(os.cpu_count() or 1)
    plain = SentenceTransformer(resolve_embedder("minilm-l6"), device="cpu")
    tokens = sum(min(plain.max_seq_length or 256, len(ids)) for ids in plain.tokenizer(texts)["input_ids"])

    def plain_encode(batch: list[str]) -> Any:
        return plain.encode(batch, batch_size=32, normalize_embeddings=True)

    def bf16_encode(batch: list[str]) -> Any:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return plain.encode(
                batch, batch_size=32, normalize_embeddings=True, convert_to_tensor=True
            ).float()

    results: dict[str, Any] = {}
    seconds, reference = _timed(plain_encode, texts)
    results["torch-fp32"] = seconds
    seconds, vectors = _timed(bf16_encode, texts)
    cosines = {"torch-bf16": float((vectors * reference).sum(axis=1).min())}
    results["torch-bf16"] = seconds
    queries: dict[str, Any] = {}
    question = [f"what is the effect of drug {i} on blood pressure in older patients" for i in range(300)]
    with tempfile.TemporaryDirectory(prefix="footnote-bench-") as home:
        for precision in ("fp32", "int8"):
            settings = Settings(home=Path(home), embed_runtime="onnx", embed_precision=precision)
            embedder: Any = create_app(settings).embedder
            seconds, vectors = _timed(embedder.embed_many, texts)
            results[f"onnx-{precision}"] = seconds
            cosines[f"onnx-{precision}"] = float((vectors * reference).sum(axis=1).min())
            for threads in (1, 2):
                embedder._query_session = embedder_session(embedder._model.graph, threads=threads)
                times = []
                for text in question:
                    started = time.perf_counter()
                    embedder._embed_one(text)
                    times.append(time.perf_counter() - started)
                times.sort()
                queries[f"onnx-{precision}, {threads} thread(s)"] = {
                    "p50_ms": round(1000 * times[len(times) // 2], 2),
                    "p99_ms": round(1000 * times[int(len(times) * 0.99) - 1], 2),
                }
    base = results["torch-fp32"]
    report = {
        "benchmark": "embed_runtimes",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "documents": len(texts),
        "tokens": tokens,
        "runtimes": {
            name: {
                "seconds": round(seconds, 2),
                "tokens_per_second": round(tokens / seconds),
                "vs_torch_fp32": round(base / seconds, 2),
                "min_cosine_to_torch_fp32": round(cosines.get(name, 1.0), 6),
            }
            for name, seconds in results.items()
        },
        "single_queries": queries,
    }
    print(json.dumps(report, indent=2))
    RESULTS.mkdir(exist_ok=True)
    capped = os.environ.get("ONEDNN_MAX_CPU_ISA")
    label = f"-onednn-{capped.lower()}" if capped else ""
    label += amx_label
    path = RESULTS / f"embed_runtimes{label}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
