"""Ingest speed against a plain sentence-transformers encode of the same texts (SciFact).

Writes the BEIR corpus (5,183 abstracts) out as one text file per document, then in
the same run times (1) a plain `SentenceTransformer.encode(batch_size=32)` of those
texts with the bundled MiniLM, which truncates each at the model's 256 tokens, and
(2) `footnote ingest` of the folder end to end (parse, chunk to fit the embedder's
window, embed every token, store in SQLite and Chroma) with the embedder the application
builds from its settings, as users get it (runtime and precision from FOOTNOTE_EMBED_RUNTIME
and FOOTNOTE_EMBED_PRECISION, by default the fastest on this CPU, unless --runtime or
--precision say otherwise). Prints both
times and their ratio and saves them as JSON under benchmarks/results/. The ingest's own
embedding time is timed too, so what the pipeline adds on top of the embedder shows. The
one-off ONNX export and int8 copy are made, and the embedder loaded, before the timed ingest
(the export and copy are kept in the model directory for later runs); their time is reported apart.

    python benchmarks/ingest_scifact.py ../shared/data/scifact [--precision bf16] [--limit N]

On a busy machine the two halves can be run one after the other as separate invocations:
`--phase encode` saves the plain encode, `--phase ingest --plain-from FILE` reads it back.
On a CPU with AMX, `--withhold-amx --runtime onnx --precision int8` stands in for a CPU
without it (the process is refused the tiles; the choice `auto` makes there).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from footnote.bench.amx import add_amx_option, apply_amx_option
from footnote.bench.ingest import footnote_ingest, plain_encode, with_ratio, write_ingest_chart
from footnote.config import Settings
from footnote.models.cpu import machine
from footnote.models.registry import resolve_embedder

RESULTS = Path(__file__).resolve().parent / "results"


def write_corpus(corpus: Path, folder: Path, limit: int | None) -> list[str]:
    """One `<id>.txt` per document (title, blank line, abstract); returns the texts written."""
    texts = []
    with corpus.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                break
            row = json.loads(line)
            text = f"{row['title']}\n\n{row['text']}\n" if row.get("title") else f"{row['text']}\n"
            (folder / f"{row['_id']}.txt").write_text(text, encoding="utf-8")
            texts.append(text)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl")
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    parser.add_argument(
        "--runtime", choices=("auto", "onnx", "torch"), help="default: the application's setting"
    )
    parser.add_argument(
        "--precision", choices=("auto", "fp32", "int8", "bf16"), help="default: the application's setting"
    )
    parser.add_argument("--phase", choices=("both", "encode", "ingest"), default="both")
    add_amx_option(parser)
    parser.add_argument("--plain-from", type=Path, help="with --phase ingest: JSON saved by --phase encode")
    args = parser.parse_args()
    amx_label = apply_amx_option(args)
    corpus = args.dataset / "corpus.jsonl"
    if not corpus.is_file():
        raise SystemExit(f"{corpus} not found; pass the BEIR SciFact folder (with corpus.jsonl)")
    plain: dict[str, Any] = {}
    if args.phase == "ingest":
        if args.plain_from is None or not args.plain_from.is_file():
            raise SystemExit("--phase ingest needs --plain-from FILE, the JSON that --phase encode saved")
        saved = json.loads(args.plain_from.read_text())
        if saved.get("documents") != _count(corpus, args.limit):
            raise SystemExit(f"{args.plain_from} timed another number of documents; rerun --phase encode")
        plain = {k: v for k, v in saved.items() if k.startswith(("plain_", "documents_", "tokens_"))}
        plain["plain_encode_from"] = {"file": args.plain_from.name, "when": saved["when"]}
    location = resolve_embedder("minilm-l6")
    with tempfile.TemporaryDirectory(prefix="footnote-bench-") as scratch:
        folder = Path(scratch) / "scifact"
        folder.mkdir()
        texts = write_corpus(corpus, folder, args.limit)
        if args.phase != "ingest":
            plain = plain_encode(location, texts)
        settings = _settings(Path(scratch) / "home", args.runtime, args.precision)
        ingest = {} if args.phase == "encode" else footnote_ingest([folder], settings)

    result: dict[str, Any] = {
        "benchmark": "ingest_scifact",
        "phase": args.phase,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "documents": len(texts),
        **plain,
        **ingest,
    }
    if ingest:
        result = with_ratio(result)
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    suffix = "" if args.phase == "both" else f"-{args.phase}"
    if ingest:
        suffix += "-{runtime}-{precision}".format(**ingest["footnote_embedder"])
    suffix += amx_label
    report = RESULTS / f"ingest_scifact{suffix}-{stamp}.json"
    report.write_text(json.dumps(result, indent=2) + "\n")
    if ingest and plain:
        print(f"wrote {report} and {write_ingest_chart(result, report.with_suffix(''))}")


def _settings(home: Path, runtime: str | None, precision: str | None) -> Settings:
    """The application's settings on a scratch home, keeping the usual model directory so the
    ONNX export and its int8 copy are made once across runs."""
    defaults = Settings()
    chosen: dict[str, Any] = {"home": home, "model_dir": defaults.model_cache}
    if runtime is not None:
        chosen["embed_runtime"] = runtime
    if precision is not None:
        chosen["embed_precision"] = precision
    return Settings(**chosen)


def _count(corpus: Path, limit: int | None) -> int:
    with corpus.open(encoding="utf-8") as lines:
        total = sum(1 for line in lines if line.strip())
    return total if limit is None else min(total, limit)


if __name__ == "__main__":
    main()
