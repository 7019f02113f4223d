"""Ingest speed against a plain sentence-transformers encode of the same texts (SciFact).

Writes the BEIR corpus (5,183 abstracts) out as one text file per document, then in
the same run times (1) a plain `SentenceTransformer.encode(batch_size=32)` of those
texts with the bundled MiniLM, which truncates each at the model's 256 tokens, and
(2) `footnote ingest` of the folder end to end (parse, chunk to fit the embedder's
window, embed every token, store in SQLite and Chroma). Prints both times and their
ratio and saves them as JSON under benchmarks/results/.

    python benchmarks/ingest_scifact.py ../shared/data/scifact [--quantize] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from footnote.application import Application, create_app
from footnote.config import Settings
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl")
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    parser.add_argument("--quantize", action="store_true", help="ingest with the int8 embedder")
    args = parser.parse_args()
    corpus = args.dataset / "corpus.jsonl"
    if not corpus.is_file():
        raise SystemExit(f"{corpus} not found; pass the BEIR SciFact folder (with corpus.jsonl)")
    location = resolve_embedder("minilm-l6")
    with tempfile.TemporaryDirectory(prefix="footnote-bench-") as scratch:
        folder = Path(scratch) / "scifact"
        folder.mkdir()
        texts = write_corpus(corpus, folder, args.limit)

        plain = SentenceTransformerEmbedder(location, display_name="minilm-l6")
        tokenizer = plain._model.tokenizer
        lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]]
        window = plain.max_tokens
        started = time.perf_counter()
        plain._model.encode(texts, batch_size=32, show_progress_bar=False)
        encode_seconds = time.perf_counter() - started

        embedder = SentenceTransformerEmbedder(location, display_name="minilm-l6", quantize=args.quantize)
        app = create_app(Settings(home=Path(scratch) / "home"), embedder=embedder)
        started = time.perf_counter()
        report = app.ingest([folder])
        ingest_seconds = time.perf_counter() - started
        chunk_tokens = [embedder.count_tokens(r.embedding_text()) for r in _all_chunks(app)]
        app.close()

    result = {
        "benchmark": "ingest_scifact",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "documents": len(texts),
        "quantized_int8": args.quantize,
        "plain_encode_seconds": round(encode_seconds, 2),
        "footnote_ingest_seconds": round(ingest_seconds, 2),
        "ratio": round(ingest_seconds / encode_seconds, 3),
        "documents_truncated_by_plain_encode": sum(1 for n in lengths if n > window),
        "tokens_dropped_by_plain_encode": sum(max(0, n - window) for n in lengths),
        "footnote_chunks": len(chunk_tokens),
        "footnote_chunks_over_window": sum(1 for n in chunk_tokens if n > window),
        "summary": report.summary(),
    }
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"ingest_scifact-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")


def _all_chunks(app: Application) -> list[ChunkRecord]:
    ids = list(app.catalog.chunk_ids())
    return list(app.catalog.chunks(ids).values())


if __name__ == "__main__":
    main()
