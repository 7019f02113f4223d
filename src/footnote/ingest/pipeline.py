"""The incremental ingest pipeline: files → documents → chunks → catalog → vectors.

The catalog is written first and is the source of truth. Vectors follow it: a
chunk is embedded after its document is committed, and marked once its vector
is stored, so an interrupted run resumes where it stopped. Unchanged files (same
SHA-256 of their bytes) are skipped without being parsed.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from footnote.errors import LoaderError
from footnote.ingest.chunker import chunk_document
from footnote.ingest.document import Document
from footnote.ingest.loaders import SUPPORTED_SUFFIXES, load_document
from footnote.models.base import Embedder
from footnote.store.catalog import Catalog
from footnote.store.vectors import Metadata, VectorIndex

Status = Literal["new", "changed", "unchanged", "failed"]
# Room left in the embedder's window for the title and heading path put before each chunk.
CONTEXT_PREFIX_TOKENS = 32


@dataclass(frozen=True)
class FileOutcome:
    path: str
    status: Status
    chunks: int = 0
    error: str | None = None


@dataclass
class IngestReport:
    files: list[FileOutcome] = field(default_factory=list)
    chunks_embedded: int = 0
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(1 for outcome in self.files if outcome.status == status)

    @property
    def failed(self) -> list[FileOutcome]:
        return [outcome for outcome in self.files if outcome.status == "failed"]

    def summary(self) -> dict[str, int | float]:
        counts: dict[str, int | float] = {s: self.count(s) for s in ("new", "changed", "unchanged", "failed")}
        counts["chunks_embedded"] = self.chunks_embedded
        counts["seconds"] = round(self.seconds, 3)
        return counts


@dataclass(frozen=True)
class Progress:
    """What the pipeline reports as it goes: a file done, or a batch of chunks embedded."""

    stage: Literal["file", "embed"]
    done: int
    total: int
    outcome: FileOutcome | None = None


ProgressCallback = Callable[[Progress], None]


def discover(paths: Iterable[Path]) -> tuple[list[Path], list[FileOutcome]]:
    """Files to ingest under `paths` (folders recursively), and failures for paths that are not there."""
    found: list[Path] = []
    missing: list[FileOutcome] = []
    for path in paths:
        if path.is_dir():
            found.extend(_walk(path))
        elif path.is_file():
            found.append(path)
        else:
            missing.append(FileOutcome(str(path), "failed", error="no such file or folder; check the path"))
    unique = list(dict.fromkeys(p.resolve() for p in found))
    return unique, missing


def _walk(folder: Path) -> Iterator[Path]:
    # followlinks=False: a symlink loop can never make the walk endless.
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            if not name.startswith(".") and path.suffix.lower() in SUPPORTED_SUFFIXES:
                yield path


class Ingestor:
    def __init__(
        self,
        catalog: Catalog,
        vectors: VectorIndex,
        embedder: Embedder,
        chunk_tokens: int = 200,
        chunk_overlap: int = 40,
        batch_size: int = 32,
    ) -> None:
        self.catalog = catalog
        self.vectors = vectors
        self.embedder = embedder
        self.max_tokens = max(16, min(chunk_tokens, embedder.max_tokens - CONTEXT_PREFIX_TOKENS))
        self.overlap = min(chunk_overlap, self.max_tokens // 2)
        self.batch_size = batch_size

    def ingest(self, paths: Iterable[Path], progress: ProgressCallback | None = None) -> IngestReport:
        started = time.perf_counter()
        report = IngestReport()
        self.reconcile()
        files, missing = discover(paths)
        report.files.extend(missing)
        for done, path in enumerate(files, start=1):
            outcome = self.ingest_file(path)
            report.files.append(outcome)
            if progress:
                progress(Progress("file", done, len(files), outcome))
        report.chunks_embedded = self.embed_pending(progress)
        report.seconds = time.perf_counter() - started
        return report

    def ingest_file(self, path: Path) -> FileOutcome:
        key = str(path)
        try:
            data = path.read_bytes()
            stat = path.stat()
        except OSError as exc:
            return FileOutcome(key, "failed", error=f"cannot be read ({exc.strerror}); check its permissions")
        content_hash = hashlib.sha256(data).hexdigest()
        existing = self.catalog.document_by_path(key)
        if existing is not None and existing.content_hash == content_hash:
            return FileOutcome(key, "unchanged", existing.chunk_count)
        try:
            document = load_document(path)
        except LoaderError as exc:
            return FileOutcome(key, "failed", error=exc.problem)
        document.path = key
        chunks = chunk_document(document, self.embedder.count_tokens, self.max_tokens, self.overlap)
        self.catalog.replace_document(document, content_hash, stat.st_size, stat.st_mtime, chunks)
        return FileOutcome(key, "new" if existing is None else "changed", len(chunks))

    def ingest_documents(
        self,
        documents: Iterable[Document],
        mtime: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Ingest documents built in memory (no file behind them), keyed by `Document.path`.

        Incremental like `ingest`: a document whose title and text are unchanged is skipped.
        """
        started = time.perf_counter()
        report = IngestReport()
        self.reconcile()
        stamp = time.time() if mtime is None else mtime
        for document in documents:
            report.files.append(self._ingest_document(document, stamp))
        report.chunks_embedded = self.embed_pending(progress)
        report.seconds = time.perf_counter() - started
        return report

    def _ingest_document(self, document: Document, mtime: float) -> FileOutcome:
        content = f"{document.title}\n{document.text}".encode()
        content_hash = hashlib.sha256(content).hexdigest()
        existing = self.catalog.document_by_path(document.path)
        if existing is not None and existing.content_hash == content_hash:
            return FileOutcome(document.path, "unchanged", existing.chunk_count)
        chunks = chunk_document(document, self.embedder.count_tokens, self.max_tokens, self.overlap)
        self.catalog.replace_document(document, content_hash, len(content), mtime, chunks)
        return FileOutcome(document.path, "new" if existing is None else "changed", len(chunks))

    def embed_pending(self, progress: ProgressCallback | None = None) -> int:
        """Embed every chunk the vector index lacks; returns how many were embedded."""
        total = self.catalog.count_pending()
        done = 0
        while batch := self.catalog.pending_chunks(limit=max(self.batch_size * 8, 256)):
            vectors = self.embedder.embed_many([c.embedding_text() for c in batch], self.batch_size)
            ids = [c.id for c in batch]
            metadata: list[Metadata] = [
                {"document_id": c.document_id, "format": c.format, "mtime": c.mtime} for c in batch
            ]
            self.vectors.upsert(ids, vectors, metadata)
            self.catalog.mark_embedded(ids)
            done += len(batch)
            if progress:
                progress(Progress("embed", done, total))
        # Replaced chunks' vectors go only now, so a search meanwhile finds the old version.
        self.reconcile()
        return done

    def reconcile(self) -> None:
        """Drop vectors of chunks the catalog has deleted."""
        tombstones = self.catalog.tombstones()
        if tombstones:
            self.vectors.delete(tombstones)
            self.catalog.clear_tombstones(tombstones)
