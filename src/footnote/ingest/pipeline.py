"""The incremental ingest pipeline: files → documents → chunks → vectors + catalog.

The SQLite catalog is the source of truth. Files are parsed and chunked on a
background thread while the chunks of earlier files are embedded; a window of
parsed files is then stored in one catalog transaction, inside which their
vectors are written, so readers see a changed file's old version (with its
vectors) until the commit shows the new one (with its own). Unchanged files
(same SHA-256 of their bytes) are skipped without being parsed.

At start-up the vector index is brought back in line with the catalog
(`footnote.ingest.reconcile`), so a run killed at any moment ends, once run again,
with exactly the chunks and vectors an uninterrupted run would have made. Which files
a run takes is `footnote.ingest.discovery`'s job; what it reports, `footnote.ingest.report`'s.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from footnote.core.collections import DEFAULT_COLLECTION
from footnote.core.document import Chunk, Document
from footnote.core.foreground import FOREGROUND
from footnote.errors import LoaderError
from footnote.ingest import reconcile as index_state
from footnote.ingest.ahead import ahead
from footnote.ingest.chunker import chunk_document
from footnote.ingest.discovery import absolute, discover
from footnote.ingest.language_vectors import LanguageVectors
from footnote.ingest.loaders import LoadOptions, load_document
from footnote.ingest.report import FileOutcome, IngestReport, Progress, ProgressCallback, Status
from footnote.models.base import Embedder, Vector
from footnote.store.catalog import Catalog, PathClaims
from footnote.store.records import DocumentEntry, DocumentRecord
from footnote.store.vectors import Metadata, VectorIndex

# The smallest chunk budget left when a long title or heading path crowds the window.
_MIN_CHUNK_TOKENS = 16
# Parsed chunks stored (and embedded) together: large enough for length-sorted batches to pad little.
WINDOW_CHUNKS = 1024
# The first window is this small, and each next one twice the last up to WINDOW_CHUNKS, so that
# embedding starts as soon as the first files are parsed instead of after a thousand chunks.
FIRST_WINDOW_CHUNKS = 64
# Chunks embedded between two looks for an answer being made (`FOREGROUND`), about half a second
# of MiniLM's work on 2 cores.
YIELD_CHUNKS = 64
# Parsed files waiting for the embedder; bounds memory while parsing runs ahead.
PARSE_AHEAD_FILES = 256
# Extracted text beyond this is refused: it would take hours to embed and is almost always a dump.
MAX_TEXT_CHARS = 20_000_000


@dataclass
class _Parsed:
    """A new or changed file, parsed and chunked, waiting to be embedded and stored."""

    outcome: FileOutcome
    entry: DocumentEntry


@dataclass
class _Window:
    """Parsed files waiting to be embedded and stored together, and how many chunks they hold."""

    items: list[_Parsed] = field(default_factory=list)
    chunks: int = 0

    def add(self, item: _Parsed) -> None:
        self.items.append(item)
        self.chunks += len(item.entry.chunks)

    def take(self) -> list[_Parsed]:
        """The files gathered so far; the window is empty again."""
        items, self.items, self.chunks = self.items, [], 0
        return items


class Ingestor:
    def __init__(
        self,
        catalog: Catalog,
        vectors: VectorIndex,
        embedder: Embedder,
        chunk_tokens: int = 200,
        chunk_overlap: int = 20,
        batch_size: int = 32,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        window_chunks: int = WINDOW_CHUNKS,
        max_text_chars: int = MAX_TEXT_CHARS,
        full_reconcile: bool = True,
        load_options: LoadOptions = LoadOptions(),
        collection: str | None = None,
        language_vectors: LanguageVectors | None = None,
    ) -> None:
        """`language_vectors`: the second index, of chunks the embedder does not read."""
        self.catalog = catalog
        self.language = language_vectors
        # The collection every document this ingestor stores joins; a file stored in another one
        # moves here (stored again, as if changed). None: a stored file keeps its collection and
        # a new one joins the default collection.
        self.collection = collection
        self.vectors = vectors
        self.embedder = embedder
        self.max_tokens = max(_MIN_CHUNK_TOKENS, min(chunk_tokens, embedder.max_tokens))
        self.overlap = min(chunk_overlap, self.max_tokens // 2)
        self.batch_size = batch_size
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.window_chunks = max(1, window_chunks)
        self.max_text_chars = max_text_chars
        self.load_options = load_options
        # A full reconciliation reads every id in the vector index: once per process is enough.
        self.full_reconcile = full_reconcile
        # The files this run works on, claimed so that a run in another process leaves them alone.
        self._claims = PathClaims()

    def ingest(
        self, paths: Iterable[Path], progress: ProgressCallback | None = None, prune: bool = False
    ) -> IngestReport:
        """Ingest files and folders; with `prune`, forget documents under `paths` that are gone."""
        with self._claiming():
            return self._ingest(paths, progress, prune)

    @contextmanager
    def _claiming(self) -> Iterator[None]:
        self._claims = self.catalog.path_claims()
        try:
            yield
        finally:
            self._claims.close()
            self._claims = PathClaims()

    def _ingest(self, paths: Iterable[Path], progress: ProgressCallback | None, prune: bool) -> IngestReport:
        started = time.perf_counter()
        paths = list(paths)
        report = IngestReport()
        self.reconcile(full=self.full_reconcile)
        self.full_reconcile = False
        report.chunks_embedded += self.embed_pending(progress)
        files, left_out = discover(paths, self.include, self.exclude)
        report.files.extend(left_out)
        self._store_all(self._parse_ahead(files), report, progress, len(files))
        if prune:
            report.files.extend(self.prune(paths, files))
        # Replaced chunks' vectors go only now: their documents' new versions are committed.
        self.reconcile()
        report.seconds = time.perf_counter() - started
        return report

    def _store_all(
        self,
        items: Iterable[FileOutcome | _Parsed],
        report: IngestReport,
        progress: ProgressCallback | None,
        files: int | None = None,
    ) -> None:
        """The ingest loop: gather parsed items into windows, each embedded and stored once it
        holds `window_chunks` chunks (the first ones fewer), and what was skipped or failed into
        `report`. `files`: how many files the items are, each reported to `progress` as it is
        taken; None for documents built in memory, whose progress is that of embedding alone."""
        window = _Window()
        parsed_chunks = report.chunks_embedded
        full = min(FIRST_WINDOW_CHUNKS, self.window_chunks)
        for taken, item in enumerate(items, start=1):
            if isinstance(item, FileOutcome):
                report.files.append(item)
            else:
                window.add(item)
                parsed_chunks += len(item.entry.chunks)
                if window.chunks >= full:
                    report.chunks_embedded += self._store(window.take(), report)
                    full = min(2 * full, self.window_chunks)
                    if progress:
                        progress(Progress("embed", report.chunks_embedded, parsed_chunks))
            if progress and files is not None:
                outcome = item if isinstance(item, FileOutcome) else item.outcome
                progress(Progress("file", taken, files, outcome))
        report.chunks_embedded += self._store(window.take(), report)
        if progress and files is not None and parsed_chunks:
            progress(Progress("embed", report.chunks_embedded, parsed_chunks))

    def ingest_file(self, path: Path) -> FileOutcome:
        """Ingest one file now: parse, embed, and store it with its vectors."""
        report = IngestReport()
        with self._claiming():
            item = self._parse_file(path)
            if isinstance(item, FileOutcome):
                return item
            self._store([item], report)
        self.reconcile()
        return item.outcome

    def _parse_ahead(self, files: Sequence[Path]) -> Iterator[FileOutcome | _Parsed]:
        """Parse `files` on a background thread, yielding each result in order."""
        return ahead(files, self._parse_file, PARSE_AHEAD_FILES, "footnote-parse")

    def _parse_file(self, path: Path) -> FileOutcome | _Parsed:
        """The file parsed and chunked, claimed until it is stored; or what became of it."""
        key = str(path)
        if not self._claims.take(key):
            return FileOutcome(key, "skipped", error="another process is ingesting it now")
        item = self._parse_claimed(path, key)
        if isinstance(item, FileOutcome):
            self._claims.release([key])
        return item

    def _parse_claimed(self, path: Path, key: str) -> FileOutcome | _Parsed:
        try:
            data = path.read_bytes()
            stat = path.stat()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return FileOutcome(
                key, "failed", error=f"cannot be read ({reason}); check the file and its permissions"
            )
        content_hash = hashlib.sha256(data).hexdigest()
        existing = self.catalog.document_by_path(key)
        if self._unchanged(existing, content_hash):
            assert existing is not None
            return FileOutcome(key, "unchanged", existing.chunk_count)
        try:
            document = load_document(path, self.load_options)
        except LoaderError as exc:
            return FileOutcome(key, "failed", error=exc.problem)
        if len(document.text) > self.max_text_chars:
            size = f"{len(document.text) / 1e6:.0f} million characters"
            limit = f"{self.max_text_chars / 1e6:.0f} million"
            return FileOutcome(key, "failed", error=f"text is {size}, over the {limit} limit; split the file")
        document.path = key
        return self._prepared(document, content_hash, len(data), stat.st_mtime, existing)

    def _unchanged(self, existing: DocumentRecord | None, content_hash: str) -> bool:
        return (
            existing is not None
            and existing.content_hash == content_hash
            and existing.collection == self._collection_for(existing)
        )

    def _collection_for(self, existing: DocumentRecord | None) -> str:
        if self.collection is not None:
            return self.collection
        return existing.collection if existing is not None else DEFAULT_COLLECTION

    def _prepared(
        self, document: Document, content_hash: str, size: int, mtime: float, existing: DocumentRecord | None
    ) -> _Parsed:
        chunks = self.chunk(document)
        collection = self._collection_for(existing)
        entry = DocumentEntry(document, content_hash, size, mtime, tuple(chunks), collection)
        status: Status = "new" if existing is None else "changed"
        return _Parsed(FileOutcome(document.path, status, len(chunks)), entry)

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks whose embedding text (title and heading path included) fits the embedder's window.

        Chunks first fill the whole window; when the title or heading path put before a chunk
        makes its embedding text overflow, the document is chunked again with a budget smaller
        by the largest overflow, so that the embedder never silently truncates a chunk and a
        document that fits the window whole stays one chunk.
        """
        budget = self.max_tokens
        window = self.embedder.max_tokens
        # A second pass counts the same sentences again: each distinct text is counted once.
        count = functools.lru_cache(maxsize=None)(self.embedder.count_tokens)
        offsets = self.embedder.token_offsets(document.text)
        while True:
            chunks = chunk_document(document, count, budget, min(self.overlap, budget // 2), offsets)
            overflow = max((count(c.embedding_text(document.title)) - window for c in chunks), default=0)
            if overflow <= 0 or budget <= _MIN_CHUNK_TOKENS:
                return chunks
            budget = max(_MIN_CHUNK_TOKENS, budget - overflow)

    def _store(self, window: Sequence[_Parsed], report: IngestReport) -> int:
        """Embed the window's chunks, then store its documents and vectors in one transaction."""
        if not window:
            return 0
        texts = [chunk.embedding_text(p.entry.document.title) for p in window for chunk in p.entry.chunks]
        chunk_texts = [chunk.text for p in window for chunk in p.entry.chunks]
        vectors, language = self._embedded(chunk_texts, texts)
        metadata = [(p.entry.document.format, p.entry.mtime) for p in window for _ in p.entry.chunks]

        def write_vectors(ids: list[tuple[int, int]]) -> None:
            rows: list[Metadata] = [
                {"document_id": document_id, "format": fmt, "mtime": mtime}
                for (_, document_id), (fmt, mtime) in zip(ids, metadata, strict=True)
            ]
            self.vectors.upsert([chunk_id for chunk_id, _ in ids], vectors, rows)
            if self.language is not None and language:
                self.language.upsert([chunk_id for chunk_id, _ in ids], language, rows)

        self.catalog.replace_documents([p.entry for p in window], write_vectors)
        self._claims.release([p.outcome.path for p in window])
        report.files.extend(p.outcome for p in window)
        return len(texts)

    def _embedded(self, chunk_texts: list[str], texts: list[str]) -> tuple[list[Vector], dict[int, Vector]]:
        """The chunks' vectors (by `texts`, their embedding texts) and those of the language index
        (by position), `YIELD_CHUNKS` at a time, each slice after any answer being made in this
        process (`FOREGROUND`): a server ingesting uploads answers at its quiet speed."""
        vectors: list[Vector] = []
        language: dict[int, Vector] = {}
        for start in range(0, len(texts), YIELD_CHUNKS):
            FOREGROUND.wait()
            part = slice(start, start + YIELD_CHUNKS)
            vectors += self.embedder.embed_many(texts[part], self.batch_size)
            if self.language is not None:
                held = self.language.embed(chunk_texts[part], texts[part], self.batch_size)
                language.update({start + position: vector for position, vector in held.items()})
        return vectors, language

    def remove_paths(self, paths: Iterable[Path]) -> list[FileOutcome]:
        """Delete the documents at `paths` or under them (folders); returns what was removed."""
        targets = [str(path) for path in paths]
        if not targets:
            return []
        gone = [
            record
            for record in self.catalog.list_documents()
            if any(record.path == t or record.path.startswith(t.rstrip(os.sep) + os.sep) for t in targets)
        ]
        if gone:
            self.catalog.delete_documents([record.id for record in gone])
        return [FileOutcome(record.path, "removed", record.chunk_count) for record in gone]

    def prune(self, paths: Sequence[Path], present: Sequence[Path]) -> list[FileOutcome]:
        """Delete documents under folders in `paths` (or at file paths) that were not found now."""
        kept = {str(p) for p in present}
        roots = [str(absolute(p)) for p in paths]
        gone = []
        for record in self.catalog.list_documents():
            under = any(
                record.path == root or record.path.startswith(root.rstrip(os.sep) + os.sep) for root in roots
            )
            if under and record.path not in kept and not os.path.isfile(record.path):
                gone.append(record)
        if not gone:
            return []
        self.catalog.delete_documents([record.id for record in gone])
        return [FileOutcome(record.path, "removed", record.chunk_count) for record in gone]

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
        report.chunks_embedded += self.embed_pending(progress)
        stamp = time.time() if mtime is None else mtime
        self._store_all((self._document_item(document, stamp) for document in documents), report, progress)
        self.reconcile()
        report.seconds = time.perf_counter() - started
        return report

    def _document_item(self, document: Document, mtime: float) -> FileOutcome | _Parsed:
        content = f"{document.title}\n{document.text}".encode()
        content_hash = hashlib.sha256(content).hexdigest()
        existing = self.catalog.document_by_path(document.path)
        if self._unchanged(existing, content_hash):
            assert existing is not None
            return FileOutcome(document.path, "unchanged", existing.chunk_count)
        return self._prepared(document, content_hash, len(content), mtime, existing)

    def embed_pending(self, progress: ProgressCallback | None = None) -> int:
        """Embed every chunk the vector index lacks; returns how many were embedded."""
        return index_state.embed_pending(
            self.catalog, self.vectors, self.embedder, self.batch_size, progress, self.language
        )

    def reconcile(self, full: bool = False) -> None:
        """Drop vectors of chunks the catalog has deleted; with `full`, also find vectors without
        chunks and chunks without vectors (`footnote.ingest.reconcile.reconcile`)."""
        index_state.reconcile(self.catalog, self.vectors, full, self.language, self.batch_size)
