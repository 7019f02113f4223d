"""Perplexity on WikiText-2: footnote vs a plain llama-cpp-python loop vs transformers, in one run.

Protocol (report it with every number): wiki.test.raw read as-is (UTF-8, LF), tokenized
with the model's own tokenizer (no BOS: SmolLM2's GGUF adds none), the first 16,384
tokens, windows of 512 with no overlap (Hugging Face protocol, stride 512), so the first
token of each window is not scored: 32 windows, 16,352 tokens scored.

Backends, all on the bundled SmolLM2-135M-Instruct Q4_1 GGUF:
- footnote: `footnote.perplexity` in process (llama.cpp, one decode per window, logits only
  for scored rows), on the GGUF as-is (Q4_1 kernels) and on an exact float32 dequantization
  of it made with llama.cpp's quantize API (`smollm2-135m@f32`);
- naive llama.cpp: `Llama(logits_all=True)`, `eval` a window, log-softmax row by row in numpy;
- transformers: the GGUF dequantized to float32 by transformers, a forward pass per window
  and log_softmax over the vocabulary (what the transformers perplexity guide's loss computes).

Speed is measured window by window in rounds (each backend scores window i before any
scores window i + 1), so that load from other processes on a shared machine falls on all
of them alike; tokens/s = tokens evaluated / summed seconds of that backend's windows.

    .venv/bin/python benchmarks/ppl_wikitext.py [--tokens 16384] [--context 512] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.test.raw"
RESULTS = REPO / "benchmarks" / "results"

WindowFn = Callable[[list[int]], list[float]]  # all tokens after the first of one window


@dataclass
class Backend:
    label: str
    score: WindowFn
    seconds: float = 0.0
    logprobs: list[float] = field(default_factory=list)

    def run(self, window: list[int]) -> None:
        started = time.perf_counter()
        values = self.score(window)
        self.seconds += time.perf_counter() - started
        self.logprobs.extend(values)

    def row(self, tokens: int) -> dict[str, Any]:
        n = len(self.logprobs)
        nll = -math.fsum(self.logprobs) / n
        spread = float(np.std(-np.asarray(self.logprobs), ddof=1)) / math.sqrt(n)
        return {
            "backend": self.label,
            "tokens_scored": n,
            "nll_mean": nll,
            "perplexity": math.exp(nll),
            "perplexity_stderr": math.exp(nll) * spread,
            "seconds": self.seconds,
            "tokens_per_second": tokens / self.seconds,
        }


def naive_llama_cpp(model_path: Path, context: int, threads: int) -> WindowFn:
    """What a user writes from the llama-cpp-python README: logits_all, eval, softmax per row."""
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(model_path),
        n_ctx=context,
        n_batch=context,
        logits_all=True,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )

    def score(window: list[int]) -> list[float]:
        llm.reset()
        llm.eval(window)
        logits = np.array(llm.scores[: len(window)], dtype=np.float64)
        out = []
        for i in range(1, len(window)):
            row = logits[i - 1]
            top = row.max()
            out.append(float(row[window[i]] - top - math.log(np.exp(row - top).sum())))
        return out

    return score


def transformers_loop(model: Any) -> WindowFn:
    """The transformers way: a forward pass, log_softmax over the vocabulary, gather the targets."""
    import torch

    def score(window: list[int]) -> list[float]:
        ids = torch.tensor([window])
        with torch.inference_mode():
            logits = model(ids).logits[0, :-1].float()
            logprobs = torch.log_softmax(logits, dim=-1).gather(1, ids[0, 1:, None])[:, 0]
        return [float(v) for v in logprobs.tolist()]

    return score


def footnote_window(scorer: Any) -> WindowFn:
    return lambda window: scorer.score_window(window, 1)


def load_transformers(gguf: Path, cache: Path, threads: int) -> tuple[Any, Any]:
    from footnote.perplexity.backends.transformers import TransformersScorer

    reference = TransformersScorer(gguf, cache_dir=cache, threads=threads)
    return reference._model, reference.tokenizer


def run_rounds(backends: Sequence[Backend], windows: Sequence[list[int]]) -> None:
    for index, window in enumerate(windows, start=1):
        for backend in backends:
            backend.run(window)
        done = {b.label: f"{index * len(window) / b.seconds:,.0f}" for b in backends}
        print(f"  window {index}/{len(windows)} tokens/s so far: {done}", file=sys.stderr, flush=True)


def footnote_end_to_end(scorer: Any, tokens: int, context: int) -> dict[str, Any]:
    from footnote.perplexity import ScoringOptions, score_file

    options = ScoringOptions(context_length=context, stride=context, max_tokens=tokens)
    return score_file(scorer, DATA, options).to_dict()


def print_table(rows: list[dict[str, Any]], reference: float) -> None:
    print(f"{'backend':<44} {'scored':>7} {'PPL':>9} {'± SE':>7} {'vs ref':>8} {'tok/s':>7}")
    for r in rows:
        delta = 100 * (r["perplexity"] / reference - 1)
        print(
            f"{r['backend']:<44} {r['tokens_scored']:>7} {r['perplexity']:>9.4f} "
            f"{r['perplexity_stderr']:>7.4f} {delta:>+7.2f}% {r['tokens_per_second']:>7.0f}"
        )


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "footnote-bench-models")
    parser.add_argument("--no-end-to-end", action="store_true", help="skip the score_file runs")
    args = parser.parse_args()

    from footnote.models.registry import resolve_llm
    from footnote.models.requantize import requantized
    from footnote.perplexity.backends.llamacpp import LlamaCppScorer

    gguf = resolve_llm("smollm2-135m")
    f32 = requantized(gguf, "f32", args.cache)
    context, threads = args.context, args.threads
    native = LlamaCppScorer(gguf, context_length=context, threads=threads, display_name="smollm2-135m")
    exact = LlamaCppScorer(f32, context_length=context, threads=threads, display_name="smollm2-135m@f32")
    hf_model, hf_tokenizer = load_transformers(gguf, args.cache / "transformers", args.threads)

    text = DATA.read_text(encoding="utf-8")
    ids = native.tokenizer.tokenize(text)[: args.tokens]
    same_tokens = hf_tokenizer.tokenize(text)[: args.tokens] == ids
    windows = [ids[i : i + args.context] for i in range(0, len(ids), args.context)]

    backends = [
        Backend("footnote llama.cpp (Q4_1 GGUF as-is)", footnote_window(native)),
        Backend("footnote llama.cpp (@f32, exact dequant.)", footnote_window(exact)),
        Backend("naive llama-cpp-python (logits_all=True)", naive_llama_cpp(gguf, context, threads)),
        Backend("transformers fp32 (GGUF dequantized)", transformers_loop(hf_model)),
    ]
    run_rounds(backends, windows)
    rows = [b.row(len(ids)) for b in backends]
    end_to_end = {}
    if not args.no_end_to_end:
        for scorer in (native, exact):
            end_to_end[scorer.name] = footnote_end_to_end(scorer, args.tokens, args.context)
    protocol = (
        f"wiki.test.raw as-is, first {len(ids):,} tokens (model tokenizer, no BOS), context {args.context}, "
        f"stride {args.context} (no overlap, first token of each window unscored), {len(windows)} windows"
    )
    print(f"\n{protocol}; threads {args.threads}; transformers tokenizer gives the same ids: {same_tokens}")
    print_table(rows, reference=rows[-1]["perplexity"])
    for name, result in end_to_end.items():
        print(
            f"footnote end to end (score_file, {name}): PPL {result['perplexity']:.4f} "
            f"± {result['perplexity_stderr']:.4f}, {result['tokens_per_second']:.0f} tokens/s"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ppl_wikitext-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report = {
        "protocol": protocol,
        "threads": args.threads,
        "same_tokens": same_tokens,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()},
        "rows": rows,
        "footnote_end_to_end": end_to_end,
    }
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"saved {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
