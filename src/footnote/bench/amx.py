"""The `--withhold-amx` option of the embedding benchmarks: an AMX machine standing in for a CPU
without the tiles (`models.cpu.withhold_amx`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from footnote.models.cpu import withhold_amx


def add_amx_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--withhold-amx",
        action="store_true",
        help="refuse this process the AMX tiles (Linux), standing in for a CPU without AMX",
    )


def apply_amx_option(args: argparse.Namespace) -> str:
    """Withholds AMX when `args` ask for it, before any model runs; returns what the result
    file's name carries for it (`-no-amx`, or nothing)."""
    if not args.withhold_amx:
        return ""
    withhold_amx()
    return "-no-amx"


def corpus_arguments(description: str | None, limit: int) -> tuple[argparse.Namespace, str]:
    """The arguments of a benchmark over a BEIR corpus's first `limit` documents (the corpus's
    folder, `--limit`, `--withhold-amx`), parsed and applied: the arguments and the result
    file's AMX label (`apply_amx_option`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl")
    parser.add_argument("--limit", type=int, default=limit)
    add_amx_option(parser)
    args = parser.parse_args()
    return args, apply_amx_option(args)
