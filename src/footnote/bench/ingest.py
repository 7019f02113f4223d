"""`footnote bench ingest`: a folder ingested by footnote against a plain sentence-transformers
encode of the same documents' texts, in one run on this machine.

The plain encode truncates each text at the model's window; footnote chunks to fit the window
and embeds every token. Both use the configured embedder's model; footnote embeds it with the
runtime and precision its settings choose, into a scratch data directory. With `against`, a
second set of files is ingested the same way in the same run and the two rates are set side by
side: Chinese documents (embedded by the language embedder too) against English ones, say.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from footnote.config import Settings
from footnote.models.base import Embedder, Vector
from footnote.models.cpu import machine


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
    """A plain `SentenceTransformer.encode(batch_size=32)` of `texts`, timed."""
    from footnote.models.embedders import SentenceTransformerEmbedder

    plain = SentenceTransformerEmbedder(location)
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


def footnote_ingest(folders: Sequence[Path], settings: Settings) -> dict[str, Any]:
    """`footnote ingest` of `folders` with `settings`, timed by stage."""
    from footnote.application import create_app

    started = time.perf_counter()
    inner = create_app(settings).embedder
    inner.embed_many(["The embedder is loaded before the timed ingest, as the plain encode's is."])
    prepared = time.perf_counter() - started
    embedder = TimedEmbedder(inner)
    app = create_app(settings, embedder=embedder)
    if app.models.language_embedder is not None:  # loaded outside the timing too
        app.models.language_embedder.embed_query("The language embedder is loaded too.")
    started = time.perf_counter()
    report = app.ingest(list(folders))
    seconds = time.perf_counter() - started
    records = list(app.catalog.chunks(list(app.catalog.chunk_ids())).values())
    chunk_tokens = [inner.count_tokens(record.embedding_text()) for record in records]
    language_chunks = app.language_vectors.vectors.count() if app.language_vectors is not None else 0
    app.close()
    documents = report.count("new") + report.count("changed")
    return {
        "footnote_embedder": {
            "name": inner.name,
            "runtime": inner.runtime,
            "precision": inner.precision,
            "prepare_seconds": round(prepared, 2),
        },
        "footnote_ingest_seconds": round(seconds, 2),
        "footnote_documents_per_second": round(documents / max(seconds, 1e-9), 2),
        "footnote_chunks_per_second": round(len(chunk_tokens) / max(seconds, 1e-9), 2),
        "footnote_embedding_seconds": round(embedder.seconds, 2),
        # On the parsing thread, so it overlaps embedding, but on few cores it slows it.
        "footnote_chunk_counting_seconds": round(embedder.counting_seconds, 2),
        "footnote_padding_share": padding_share(inner),
        "footnote_chunks": len(chunk_tokens),
        "footnote_tokens_embedded": sum(chunk_tokens),
        "footnote_chunks_over_window": sum(1 for n in chunk_tokens if n > inner.max_tokens),
        # Chunks in languages the embedder does not read, embedded by the language embedder too.
        "footnote_language_index_chunks": language_chunks,
        "footnote_chunk_settings": {
            "chunk_tokens": settings.chunk_tokens,
            "overlap": settings.chunk_overlap,
            "embed_batch_size": settings.embed_batch_size,
        },
        "summary": report.summary(),
    }


def compare_folder(
    folders: Sequence[Path], settings: Settings, against: Sequence[Path] = ()
) -> dict[str, Any]:
    """The side-by-side on the files under `folders`: the plain encode reads each document's text
    as footnote's loaders extract it; footnote ingests into a scratch data directory. With
    `against`, footnote's ingest of those files too, each into its own scratch directory, and
    the documents per second of `folders` over theirs."""
    from footnote.ingest.discovery import discover
    from footnote.ingest.loaders import load_document
    from footnote.models.registry import resolve_embedder

    files, _ = discover(folders)
    texts = [load_document(path).text for path in files]
    plain = plain_encode(resolve_embedder(settings.embedder), texts)
    ingest = scratch_ingest(folders, settings)
    result = with_ratio({"documents": len(texts), "machine": machine(), **plain, **ingest})
    if against:
        other = scratch_ingest(against, settings)
        result["against"] = {"paths": [str(path) for path in against], **other}
        result["documents_per_second_vs_against"] = round(
            ingest["footnote_documents_per_second"] / max(other["footnote_documents_per_second"], 1e-9), 3
        )
    return result


def scratch_ingest(folders: Sequence[Path], settings: Settings) -> dict[str, Any]:
    """`footnote_ingest` of `folders` into a scratch data directory of its own, with embedded
    stores there even where the settings name shared ones (nothing is written to those)."""
    with tempfile.TemporaryDirectory(prefix="footnote-bench-") as scratch:
        update = {
            "home": Path(scratch),
            "model_dir": settings.model_cache,
            "catalog_url": "",
            "vector_url": "",
        }
        scratch_settings = settings.model_copy(update=update)
        return footnote_ingest(folders, scratch_settings)


def with_ratio(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with footnote's time over the plain encode's, and what the pipeline adds."""
    ingest_seconds = float(result["footnote_ingest_seconds"])
    result["ratio"] = round(ingest_seconds / max(float(result["plain_encode_seconds"]), 1e-9), 3)
    embedding = float(result["footnote_embedding_seconds"])
    result["pipeline_seconds_beyond_embedding"] = round(ingest_seconds - embedding, 2)
    return result


def padding_share(embedder: Embedder) -> float | None:
    """Of the token positions the model ran, the share that was padding (None: not recorded)."""
    positions = getattr(embedder, "positions_run", 0)
    if not positions:
        return None
    return round(1 - getattr(embedder, "tokens_run", 0) / positions, 4)


def write_ingest_chart(result: dict[str, Any], stem: Path) -> Path:
    """The side-by-side's seconds as a bar chart at `stem`.png (or .svg); returns its path."""
    from footnote.bench.chart import write_bars

    bars = [
        ("plain encode (truncating)", float(result["plain_encode_seconds"])),
        ("footnote ingest", float(result["footnote_ingest_seconds"])),
        ("  of which embedding", float(result["footnote_embedding_seconds"])),
    ]
    embedder = result["footnote_embedder"]
    title = (
        f"{result['documents']} documents, {result['machine']['cpu']}, "
        f"{embedder['runtime']}-{embedder['precision']}: ratio {result['ratio']}"
    )
    return write_bars(bars, stem, title, "seconds")
