"""`footnote bench ppl`: footnote's scorer against transformers fp32 and a plain llama-cpp-python
loop, on the same tokens and the same windows, in one run on this machine.

Contenders, all on one GGUF:
- `footnote`: `footnote.perplexity`'s llama.cpp scorer on the GGUF as-is (one decode per window,
  several short windows to a decode, logits only for the rows that predict a scored token);
- `footnote-f32`: the same scorer on an exact float32 dequantization of the GGUF made with
  llama.cpp's quantize API (`NAME@f32`), the weights transformers computes with;
- `footnote-q8_0`: the same scorer on the GGUF requantized to Q8_0 (`NAME@q8_0`), whose int8
  kernels are llama.cpp's fastest on most CPUs (Q4_1, the bundled model's format, has no
  repacked or tiled CPU kernel), at a perplexity cost the table shows;
- `footnote-torch-bf16`: footnote's torch scorer (FOOTNOTE_SCORE_RUNTIME=torch-bf16, the `auto`
  choice on CPUs with AMX) on the GGUF dequantized by transformers, its products in bfloat16;
- `llama-cpp-python`: what a user writes from its README, `Llama(logits_all=True)`, `eval` a
  window, log-softmax row by row in numpy;
- `transformers`: the GGUF dequantized to float32 by transformers, a forward pass per window and
  log_softmax over the vocabulary (what the transformers perplexity guide's loss computes).

The text is tokenized once with the GGUF's own tokenizer and cut into Hugging Face sliding
windows; every contender scores exactly those windows. Speed is measured in rounds (each
contender scores window group i before any scores group i + 1, the order rotating from round
to round), so that load from other processes on a shared machine falls on all of them alike;
tokens/s = tokens of text / summed seconds of that contender's windows.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from footnote.config import Settings
from footnote.errors import ConfigError
from footnote.models.cpu import machine
from footnote.models.scoring import Tokenizer, TokenScorer
from footnote.perplexity.text import iter_text, iter_token_ids
from footnote.perplexity.windows import sliding_windows

CONTENDERS = (
    "footnote",
    "footnote-f32",
    "footnote-q8_0",
    "footnote-torch-bf16",
    "llama-cpp-python",
    "transformers",
)
VARIANTS = {"f32": "exact dequant.", "q8_0": "requantized"}  # footnote on copies of the GGUF
REFERENCE = "transformers"
DEFAULT_MAX_TOKENS = 4096

WindowSpec = tuple[list[int], int]  # a window's token ids and the index of its first scored token
GroupScorer = Callable[[Sequence[WindowSpec]], list[list[float]]]


@dataclass(frozen=True)
class PplPlan:
    text: Path
    model: str  # a registered name or a GGUF path (llama.cpp and transformers both read it)
    context: int = 512
    stride: int | None = None  # None: no overlap
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    threads: int = 0  # 0: every core
    skip: frozenset[str] = frozenset()


@dataclass
class Contender:
    key: str
    label: str
    score: GroupScorer
    seconds: float = 0.0
    logprobs: list[float] = field(default_factory=list)

    def run(self, group: Sequence[WindowSpec]) -> None:
        started = time.perf_counter()
        values = self.score(group)
        self.seconds += time.perf_counter() - started
        for window_values in values:
            self.logprobs.extend(window_values)

    def row(self, tokens: int) -> dict[str, Any]:
        n = len(self.logprobs)
        nll = -math.fsum(self.logprobs) / n
        spread = float(np.std(-np.asarray(self.logprobs), ddof=1)) / math.sqrt(n) if n > 1 else 0.0
        return {
            "key": self.key,
            "backend": self.label,
            "tokens_scored": n,
            "nll_mean": nll,
            "perplexity": math.exp(nll),
            "perplexity_stderr": math.exp(nll) * spread,
            "seconds": self.seconds,
            "tokens_per_second": tokens / self.seconds if self.seconds > 0 else math.inf,
        }


def footnote_contender(scorer: TokenScorer) -> GroupScorer:
    return lambda group: scorer.score_windows(group)


def naive_llama_cpp(model_path: Path, context: int, threads: int) -> GroupScorer:
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

    def score(window: list[int], first: int) -> list[float]:
        llm.reset()
        llm.eval(window)
        logits = np.array(llm.scores[: len(window)], dtype=np.float64)
        out = []
        for i in range(first, len(window)):
            row = logits[i - 1]
            top = row.max()
            out.append(float(row[window[i]] - top - math.log(np.exp(row - top).sum())))
        return out

    return lambda group: [score(window, first) for window, first in group]


def transformers_loop(model: Any) -> GroupScorer:
    """The transformers way: a forward pass, log_softmax over the vocabulary, gather the targets."""
    import torch

    def score(window: list[int], first: int) -> list[float]:
        ids = torch.tensor([window])
        with torch.inference_mode():
            logits = model(ids).logits[0, first - 1 : -1].float()
            logprobs = torch.log_softmax(logits, dim=-1).gather(1, ids[0, first:, None])[:, 0]
        return [float(v) for v in logprobs.tolist()]

    return lambda group: [score(window, first) for window, first in group]


def check_transformers() -> None:
    """A ConfigError naming the fix when the transformers contenders cannot run here."""
    missing = [name for name in ("torch", "transformers", "gguf") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"the transformers contenders need {', '.join(missing)}: install them with "
            "`pip install transformers torch gguf accelerate` (or `pip install -e .`), "
            "or pass --skip transformers --skip footnote-torch-bf16"
        )


def read_tokens(tokenizer: Tokenizer, path: Path, max_tokens: int | None) -> list[int]:
    """The first `max_tokens` token ids of a UTF-8 file, read in pieces."""
    with path.open("rb") as stream:
        ids = iter_token_ids(tokenizer, iter_text(stream, str(path)))
        return list(itertools.islice(ids, max_tokens))


def window_groups(ids: list[int], context: int, stride: int, per_group: int) -> list[list[WindowSpec]]:
    """The Hugging Face windows over `ids` that score something, in groups of `per_group`."""
    windows = [
        (w.tokens, w.first_scored) for w in sliding_windows(iter(ids), context, stride) if w.scored_count
    ]
    return [windows[i : i + per_group] for i in range(0, len(windows), per_group)]


def run_rounds(
    contenders: Sequence[Contender],
    groups: Sequence[Sequence[WindowSpec]],
    on_round: Callable[[int, int], None] | None = None,
) -> None:
    """Group i through every contender before group i + 1, starting one contender later each round."""
    for index, group in enumerate(groups):
        shift = index % len(contenders)
        for contender in [*contenders[shift:], *contenders[:shift]]:
            contender.run(group)
        if on_round is not None:
            on_round(index + 1, len(groups))


def compare(
    plan: PplPlan, settings: Settings, on_round: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """The side-by-side of `plan` on this machine: the report `footnote bench ppl` prints and saves."""
    from footnote.models.gguf import local_gguf
    from footnote.perplexity.backends.llamacpp import LlamaCppScorer

    stride = _checked_stride(plan)
    threads = plan.threads or os.cpu_count() or 1
    gguf = local_gguf(plan.model, settings)
    native = LlamaCppScorer(gguf, context_length=plan.context, threads=threads, display_name=plan.model)
    scorers: list[TokenScorer] = [native]
    try:
        ids = read_tokens(native.tokenizer, plan.text, plan.max_tokens)
        if len(ids) < 2:
            raise ConfigError(f"{plan.text} has {len(ids)} token; the comparison needs at least two")
        contenders, hf_tokenizer = _contenders(plan, settings, native, gguf, threads, scorers)
        same_tokens = None
        if hf_tokenizer is not None:
            same_tokens = read_tokens(hf_tokenizer, plan.text, plan.max_tokens) == ids
        groups = window_groups(ids, plan.context, stride, native.windows_per_batch)
        warm_up = [(groups[0][0][0][:16], 1)]
        for contender in contenders:
            contender.score(warm_up)  # first-call costs (allocations, lazy init) stay out of the timing
        run_rounds(contenders, groups, on_round)
    finally:
        for scorer in scorers:
            scorer.close()
    report = {
        "benchmark": "bench_ppl",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "text": str(plan.text),
        "model": plan.model,
        "model_file": gguf.name,
        "protocol": {
            "name": "hf",
            "context_length": plan.context,
            "stride": stride,
            "max_tokens": plan.max_tokens,
            "tokens": len(ids),
            "windows": sum(len(group) for group in groups),
            "bos": bool(native.tokenizer.add_bos and native.tokenizer.bos_id is not None),
        },
        "threads": threads,
        "footnote_windows_per_decode": native.windows_per_batch,
        "same_tokens": same_tokens,
        "skipped": sorted(plan.skip),
        "machine": machine(),
        "rows": [c.row(len(ids)) for c in contenders],
    }
    return with_ratios(report)


def _checked_stride(plan: PplPlan) -> int:
    """The plan's stride; a ConfigError naming the fix for anything `compare` cannot run."""
    unknown = sorted(plan.skip - set(CONTENDERS))
    if unknown:
        raise ConfigError(f"--skip {', '.join(unknown)}: unknown; choose from {', '.join(CONTENDERS)}")
    if plan.skip >= set(CONTENDERS):
        raise ConfigError(f"every contender is skipped; keep one of {', '.join(CONTENDERS)}")
    if plan.model.startswith(("http://", "https://", "transformers:")):
        raise ConfigError(f"--model {plan.model}: bench ppl needs a GGUF, a registered name or a .gguf path")
    if {REFERENCE, "footnote-torch-bf16"} - plan.skip:
        check_transformers()
    stride = plan.stride or plan.context
    if not 1 <= stride <= plan.context:
        raise ConfigError(f"--stride {stride} must be between 1 and the context length ({plan.context})")
    return stride


def _contenders(
    plan: PplPlan,
    settings: Settings,
    native: TokenScorer,
    gguf: Path,
    threads: int,
    opened: list[TokenScorer],
) -> tuple[list[Contender], Tokenizer | None]:
    """The contenders `plan` keeps (scorers it opens go into `opened`), and the transformers
    tokenizer when transformers is one of them."""
    from footnote.models.gguf import local_gguf
    from footnote.perplexity.backends.llamacpp import LlamaCppScorer

    contenders: list[Contender] = []
    hf_tokenizer: Tokenizer | None = None
    if "footnote" not in plan.skip:
        contenders.append(
            Contender("footnote", f"footnote llama.cpp ({plan.model})", footnote_contender(native))
        )
    name, _, quantization = plan.model.partition("@")
    for kind, note in VARIANTS.items():
        if f"footnote-{kind}" in plan.skip or quantization:
            continue
        copy = local_gguf(f"{name}@{kind}", settings)
        scorer = LlamaCppScorer(
            copy, context_length=plan.context, threads=threads, display_name=f"{name}@{kind}"
        )
        opened.append(scorer)
        label = f"footnote llama.cpp ({name}@{kind}, {note})"
        contenders.append(Contender(f"footnote-{kind}", label, footnote_contender(scorer)))
    if "footnote-torch-bf16" not in plan.skip:
        from footnote.perplexity.backends.transformers import TransformersScorer

        cache = settings.model_cache / "transformers"
        bf16 = TransformersScorer(gguf, cache_dir=cache, threads=threads, display_name=plan.model, bf16=True)
        opened.append(bf16)
        label = f"footnote torch bf16 ({plan.model}, GGUF dequantized)"
        contenders.append(Contender("footnote-torch-bf16", label, footnote_contender(bf16)))
    if "llama-cpp-python" not in plan.skip:
        label = "plain llama-cpp-python (logits_all=True)"
        contenders.append(Contender("llama-cpp-python", label, naive_llama_cpp(gguf, plan.context, threads)))
    if REFERENCE not in plan.skip:
        from footnote.perplexity.backends.transformers import TransformersScorer

        reference = TransformersScorer(gguf, cache_dir=settings.model_cache / "transformers", threads=threads)
        label = "transformers fp32 (GGUF dequantized)"
        contenders.append(Contender(REFERENCE, label, transformers_loop(reference._model)))
        hf_tokenizer = reference.tokenizer
    if not contenders:  # only copies were kept, and the model already names its quantization
        raise ConfigError(f"--model {plan.model} is itself a copy: keep footnote or another contender")
    return contenders, hf_tokenizer


def with_ratios(report: dict[str, Any]) -> dict[str, Any]:
    """Each row's speed and perplexity against the transformers row, when there is one."""
    reference = next((row for row in report["rows"] if row["key"] == REFERENCE), None)
    report["reference"] = REFERENCE if reference else None
    for row in report["rows"]:
        if reference is None:
            row["speedup_vs_transformers"] = row["perplexity_vs_transformers_percent"] = None
            continue
        row["speedup_vs_transformers"] = round(row["tokens_per_second"] / reference["tokens_per_second"], 3)
        row["perplexity_vs_transformers_percent"] = round(
            100 * (row["perplexity"] / reference["perplexity"] - 1), 4
        )
    return report


def describe(report: dict[str, Any]) -> str:
    """One line of protocol to print with the figures."""
    p = report["protocol"]
    overlap = "no overlap" if p["stride"] == p["context_length"] else f"stride {p['stride']}"
    return (
        f"{report['text']}: first {p['tokens']:,} tokens ({report['model']} tokenizer, "
        f"{'BOS' if p['bos'] else 'no BOS'}), windows of {p['context_length']}, {overlap}, "
        f"{p['windows']} windows; {report['threads']} threads"
    )


def table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the comparison table, as text."""
    header = ["backend", "scored", "PPL", "± SE", "vs transformers", "tokens/s", "speed-up"]
    rows = []
    for r in report["rows"]:
        delta, speedup = r["perplexity_vs_transformers_percent"], r["speedup_vs_transformers"]
        rows.append(
            [
                r["backend"],
                str(r["tokens_scored"]),
                f"{r['perplexity']:.4f}",
                f"{r['perplexity_stderr']:.4f}",
                "" if delta is None else f"{delta:+.2f}%",
                f"{r['tokens_per_second']:.1f}",
                "" if speedup is None else f"{speedup:.2f}×",
            ]
        )
    return header, rows


def default_out(now: datetime | None = None) -> Path:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return Path("benchmarks") / "results" / f"ppl-{stamp}.json"
