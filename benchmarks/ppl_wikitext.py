"""Perplexity on WikiText-2: footnote vs a plain llama-cpp-python loop vs transformers, in one run.

Protocol (report it with every number): wiki.test.raw read as-is (UTF-8, LF), tokenized
with the model's own tokenizer (no BOS: SmolLM2's GGUF adds none), the first 16,384
tokens, windows of 512 with no overlap (Hugging Face protocol, stride 512), so the first
token of each window is not scored: 32 windows, 16,352 tokens scored.

The comparison itself is `footnote.bench.ppl` (what `footnote bench ppl` runs): footnote's
llama.cpp scorer on the bundled SmolLM2-135M-Instruct Q4_1 GGUF as-is and on its exact float32
dequantization (`smollm2-135m@f32`), a plain `Llama(logits_all=True)` loop, and transformers
fp32 on the GGUF dequantized, window group by window group in rounds. This script adds the
footnote end-to-end runs (`score_file`, tokenizing and windowing included) after the rounds.

    .venv/bin/python benchmarks/ppl_wikitext.py [--tokens 16384] [--context 512] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from footnote.bench.ppl import PplPlan, compare, describe, table
from footnote.bench.ppl_chart import write_ppl_chart
from footnote.config import Settings

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.test.raw"
RESULTS = REPO / "benchmarks" / "results"


def footnote_end_to_end(spec: str, plan: PplPlan, settings: Settings) -> dict[str, Any]:
    from footnote.perplexity import ScoringOptions, open_scorer, score_file

    options = ScoringOptions(context_length=plan.context, stride=plan.stride, max_tokens=plan.max_tokens)
    with open_scorer(spec, settings, context_length=plan.context) as scorer:
        return score_file(scorer, plan.text, options).to_dict()


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--text", type=Path, default=DATA)
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-end-to-end", action="store_true", help="skip the score_file runs")
    args = parser.parse_args()

    settings = Settings()
    plan = PplPlan(args.text, "smollm2-135m", args.context, None, args.tokens, args.threads)
    report = compare(plan, settings, lambda done, total: print(f"  group {done}/{total}", file=sys.stderr))
    if not args.no_end_to_end:
        report["footnote_end_to_end"] = {
            spec: footnote_end_to_end(spec, plan, settings) for spec in ("smollm2-135m", "smollm2-135m@f32")
        }
    print(f"\n{describe(report)}; transformers tokenizer gives the same ids: {report['same_tokens']}")
    header, rows = table(report)
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(row))
    for name, result in report.get("footnote_end_to_end", {}).items():
        print(
            f"footnote end to end (score_file, {name}): PPL {result['perplexity']:.4f} "
            f"± {result['perplexity_stderr']:.4f}, {result['tokens_per_second']:.0f} tokens/s"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"ppl_wikitext-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    chart = write_ppl_chart(report, out.with_suffix(""), f"WikiText-2 test, {plan.model}")
    print(f"saved {out.relative_to(REPO)} and {chart.relative_to(REPO)}")


if __name__ == "__main__":
    main()
