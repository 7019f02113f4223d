"""Ingest speed against a plain sentence-transformers encode of the same texts (SciFact).

Writes the BEIR corpus (5,183 abstracts) out as one text file per document, then in
the same run times (1) a plain `SentenceTransformer.encode(batch_size=32)` of those
texts with the bundled MiniLM, which truncates each at the model's 256 tokens, and
(2) `footnote ingest` of the folder end to end (parse, chunk to fit the embedder's
window, embed every token, store in SQLite and Chroma) with the embedder the application
builds from its settings, as users get it (runtime and precision from FOOTNOTE_EMBED_RUNTIME
and FOOTNOTE_EMBED_INT8 unless --runtime or --int8/--no-int8 say otherwise). Prints both
times and their ratio and saves them as JSON under benchmarks/results/. The ingest's own
embedding time is timed too, so what the pipeline adds on top of the embedder shows. The
one-off ONNX export and int8 copy are made before the timed ingest (and kept in the model
directory for later runs); their time is reported apart.

    python benchmarks/ingest_scifact.py ../shared/data/scifact [--int8] [--limit N]

On a busy machine the two halves can be run one after the other as separate invocations:
`--phase encode` saves the plain encode, `--phase ingest --plain-from FILE` reads it back.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.models.base import Embedder, Vector
from footnote.models.embedders import SentenceTransformerEmbedder
from footnote.models.registry import resolve_embedder
from footnote.store.catalog import ChunkRecord

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


class TimedEmbedder(Embedder):
    """Delegates to `inner` and adds up the seconds spent embedding, and those spent counting
    tokens for the chunker (on the parsing thread, alongside embedding)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dimension, self.max_tokens = inner.name, inner.dimension, inner.max_tokens
        self.model_name, self.runtime, self.precision = inner.model_name, inner.runtime, inner.precision
        self.seconds = 0.0
        self.counting_seconds = 0.0

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        return self.embed_many(texts)

    def embed_many(self, texts: Sequence[str], batch_size: int = 32) -> list[Vector]:
        started = time.perf_counter()
        vectors = self.inner.embed_many(texts, batch_size)
        self.seconds += time.perf_counter() - started
        return vectors

    def count_tokens(self, text: str) -> int:
        started = time.perf_counter()
        count = self.inner.count_tokens(text)
        self.counting_seconds += time.perf_counter() - started
        return count

    def token_offsets(self, text: str) -> list[tuple[int, int]] | None:
        started = time.perf_counter()
        offsets = self.inner.token_offsets(text)
        self.counting_seconds += time.perf_counter() - started
        return offsets


def plain_encode(location: str, texts: list[str]) -> dict[str, Any]:
    plain = SentenceTransformerEmbedder(location, display_name="minilm-l6")
    lengths = [plain.count_tokens(text) for text in texts]
    window = plain.max_tokens
    started = time.perf_counter()
    plain._model.encode(texts, batch_size=32, show_progress_bar=False)
    return {
        "plain_encode_seconds": round(time.perf_counter() - started, 2),
        "plain_encode_tokens": sum(min(n, window) for n in lengths),
        "documents_truncated_by_plain_encode": sum(1 for n in lengths if n > window),
        "tokens_dropped_by_plain_encode": sum(max(0, n - window) for n in lengths),
    }


def footnote_ingest(folder: Path, settings: Settings) -> dict[str, Any]:
    started = time.perf_counter()
    inner = create_app(settings).embedder
    prepared = time.perf_counter() - started
    embedder = TimedEmbedder(inner)
    app = create_app(settings, embedder=embedder)
    started = time.perf_counter()
    report = app.ingest([folder])
    seconds = time.perf_counter() - started
    records = _all_chunks(app)
    chunk_tokens = [inner.count_tokens(r.embedding_text()) for r in records]
    app.close()
    return {
        "footnote_embedder": {
            "name": inner.name,
            "runtime": inner.runtime,
            "precision": inner.precision,
            "prepare_seconds": round(prepared, 2),
        },
        "footnote_ingest_seconds": round(seconds, 2),
        "footnote_embedding_seconds": round(embedder.seconds, 2),
        # On the parsing thread, so it overlaps embedding, but on few cores it slows it.
        "footnote_chunk_counting_seconds": round(embedder.counting_seconds, 2),
        "footnote_padding_share": _padding_share(inner),
        "footnote_chunks": len(chunk_tokens),
        "footnote_tokens_embedded": sum(chunk_tokens),
        "footnote_chunks_over_window": sum(1 for n in chunk_tokens if n > inner.max_tokens),
        "footnote_chunk_settings": {
            "chunk_tokens": app.settings.chunk_tokens,
            "overlap": app.settings.chunk_overlap,
        },
        "summary": report.summary(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl")
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    parser.add_argument("--runtime", choices=("onnx", "torch"), help="default: the application's setting")
    parser.add_argument(
        "--int8",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ingest with (or without) the int8 embedder; default: the application's setting",
    )
    parser.add_argument("--phase", choices=("both", "encode", "ingest"), default="both")
    parser.add_argument("--plain-from", type=Path, help="with --phase ingest: JSON saved by --phase encode")
    args = parser.parse_args()
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
        settings = _settings(Path(scratch) / "home", args.runtime, args.int8)
        ingest = {} if args.phase == "encode" else footnote_ingest(folder, settings)

    result: dict[str, object] = {
        "benchmark": "ingest_scifact",
        "phase": args.phase,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": _cpu_model(),
            "cpu_flags": _cpu_flags(),
            "python": platform.python_version(),
            # Other work on the machine slows both halves; a ratio from a loaded run says less.
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "documents": len(texts),
        **plain,
        **ingest,
    }
    if ingest:
        ingest_seconds = float(ingest["footnote_ingest_seconds"])
        result["ratio"] = round(ingest_seconds / float(plain["plain_encode_seconds"]), 3)
        embedding = float(ingest["footnote_embedding_seconds"])
        result["pipeline_seconds_beyond_embedding"] = round(ingest_seconds - embedding, 2)
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    suffix = "" if args.phase == "both" else f"-{args.phase}"
    if ingest:
        suffix += "-{runtime}-{precision}".format(**ingest["footnote_embedder"])
    (RESULTS / f"ingest_scifact{suffix}-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")


def _settings(home: Path, runtime: str | None, int8: bool | None) -> Settings:
    """The application's settings on a scratch home, keeping the usual model directory so the
    ONNX export and its int8 copy are made once across runs."""
    defaults = Settings()
    chosen: dict[str, Any] = {"home": home, "model_dir": defaults.model_cache}
    if runtime is not None:
        chosen["embed_runtime"] = runtime
    if int8 is not None:
        chosen["embed_int8"] = int8
    return Settings(**chosen)


def _padding_share(embedder: Embedder) -> float | None:
    """Of the token positions the model ran, the share that was padding (None: not recorded)."""
    positions = getattr(embedder, "positions_run", 0)
    if not positions:
        return None
    return round(1 - getattr(embedder, "tokens_run", 0) / positions, 4)


def _cpu_flags() -> list[str]:
    """The CPU's vector-instruction flags (what int8 and float kernels pick their paths by)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return []
    line = next((row for row in text.splitlines() if row.startswith("flags")), "")
    wanted = ("avx", "fma", "vnni", "amx", "sse4", "f16c", "bf16")
    return sorted(flag for flag in line.split(":", 1)[-1].split() if any(w in flag for w in wanted))


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return platform.processor()
    line = next((row for row in text.splitlines() if row.startswith("model name")), "")
    return line.split(":", 1)[-1].strip() or platform.processor()


def _count(corpus: Path, limit: int | None) -> int:
    with corpus.open(encoding="utf-8") as lines:
        total = sum(1 for line in lines if line.strip())
    return total if limit is None else min(total, limit)


def _all_chunks(app: Application) -> list[ChunkRecord]:
    ids = list(app.catalog.chunk_ids())
    return list(app.catalog.chunks(ids).values())


if __name__ == "__main__":
    main()
