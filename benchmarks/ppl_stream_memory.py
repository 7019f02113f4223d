"""A 100 MB text through footnote's perplexity pipeline in bounded memory.

Builds a ~100 MB UTF-8 file from WikiText-2 test copies and streams it through
`score_file` with the real SmolLM2 tokenizer (llama.cpp) and a scorer that returns at
once, so what is measured is reading, UTF-8 checking, incremental tokenization and
windowing, not the model (scoring 25 M tokens would take hours on 2 cores). Prints and
saves the peak resident memory against a baseline measured before the run.

    .venv/bin/python benchmarks/ppl_stream_memory.py [--megabytes 100]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from footnote.models.registry import resolve_llm
from footnote.perplexity import ScoringOptions, Tokenizer, TokenScorer, score_file
from footnote.perplexity.backends.llamacpp import load_tokenizer

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.test.raw"


class InstantScorer(TokenScorer):
    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.context_length = 512
        self.name = "instant"

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        return [-1.0] * (len(token_ids) - first_scored)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    block = DATA.read_bytes()
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big.txt"
        with big.open("wb") as handle:
            while handle.tell() < args.megabytes * 1_000_000:
                handle.write(block)
        size = big.stat().st_size
        del block
        scorer = InstantScorer(load_tokenizer(resolve_llm("smollm2-135m")))
        baseline = peak_rss_mb()
        started = time.perf_counter()
        result = score_file(scorer, big, ScoringOptions(context_length=512))
        seconds = time.perf_counter() - started
    peak = peak_rss_mb()
    report = {
        "file_bytes": size,
        "tokens_read": result.tokens_read,
        "windows": result.windows,
        "seconds": seconds,
        "peak_rss_mb_before": baseline,
        "peak_rss_mb_after": peak,
    }
    print(json.dumps(report, indent=2))
    out = REPO / "benchmarks" / "results" / f"ppl_stream_memory-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
