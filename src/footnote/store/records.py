"""The catalog's records: the rows a catalog stores and returns (documents, chunks, collections,
API keys, the change log's deltas), the columns and queries both catalogs share, and the text
each chunk gives the keyword index."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from footnote.core.cjk import index_grams, without_cjk
from footnote.core.collections import DEFAULT_COLLECTION
from footnote.core.document import Chunk, Document, embedding_text
from footnote.core.span import Span, Spanned


@dataclass(frozen=True)
class DocumentRecord:
    id: int
    path: str
    content_hash: str
    format: str
    title: str
    url: str | None
    size: int
    mtime: float
    ingested_at: float
    collection: str = DEFAULT_COLLECTION
    chunk_count: int = 0


@dataclass(frozen=True)
class DocumentEntry:
    """A parsed document and its chunks, ready to be stored."""

    document: Document
    content_hash: str
    size: int
    mtime: float
    chunks: tuple[Chunk, ...]
    collection: str = DEFAULT_COLLECTION

    # The `documents` table's columns, in the order `row` gives their values.
    COLUMNS = "path, content_hash, format, title, url, size, mtime, text, ingested_at, collection"

    def row(self, ingested_at: float) -> tuple[object, ...]:
        """The values of `COLUMNS` for this entry, stored at `ingested_at` (seconds since the epoch)."""
        d = self.document
        return (
            d.path,
            self.content_hash,
            d.format,
            d.title,
            d.url,
            self.size,
            self.mtime,
            d.text,
            ingested_at,
            self.collection,
        )


@dataclass(frozen=True)
class ChunkRecord(Spanned):
    """A stored chunk with its document's path, title and format; `start`, `end`,
    `heading_path` and `page` read its span."""

    id: int
    document_id: int
    ordinal: int
    text: str
    span: Span
    token_count: int
    path: str
    title: str
    url: str | None
    format: str = ""
    mtime: float = 0.0
    language: str = ""  # `footnote.core.language` code, detected from the text at ingest

    def embedding_text(self) -> str:
        return embedding_text(self.text, self.heading_path, self.title)


@dataclass(frozen=True)
class CollectionRecord:
    """A collection with how many documents and chunks it holds."""

    name: str
    documents: int
    chunks: int


@dataclass(frozen=True)
class KeyRecord:
    """A scoped API key as the catalog keeps it: its name, the SHA-256 of the key (never the
    key itself), and the collections it reads and writes."""

    name: str
    key_hash: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    created_at: float


@dataclass(frozen=True)
class ChunkChanges:
    """Chunks added and removed between two generations of the catalog."""

    added: tuple[int, ...]
    removed: tuple[int, ...]


# Called inside a document replacement with (chunk id, document id) of every new chunk.
WriteVectors = Callable[[list[tuple[int, int]]], None]

# BM25 weight of each keyword-index column: text, heading, title, grams (CJK bigrams).
BM25_COLUMN_WEIGHTS = (1.0, 0.5, 1.0, 1.0)


# --- SQL that both dialects share ------------------------------------------------------------

DOCUMENT_COLUMNS = (
    "d.id, d.path, d.content_hash, d.format, d.title, d.url, d.size, d.mtime, d.ingested_at, d.collection"
)
CHUNK_COLUMNS = (
    'c.id, c.document_id, c.ordinal, c.text, c.start, c."end", c.page, c.heading_path, c.token_count, '
    "d.path, d.title, d.url, d.format, d.mtime, c.language"
)


COLLECTIONS_QUERY = (
    "SELECT d.collection, COUNT(DISTINCT d.id), COUNT(c.id) FROM documents d "
    "LEFT JOIN chunks c ON c.document_id = d.id GROUP BY d.collection ORDER BY d.collection"
)
# The `api_keys` table's columns; `read` and `write` hold JSON lists of collection names.
KEY_COLUMNS = 'name, key_hash, "read", "write", created_at'


def key_row(key: KeyRecord) -> tuple[object, ...]:
    return (key.name, key.key_hash, json.dumps(list(key.read)), json.dumps(list(key.write)), key.created_at)


def key_record(row: Sequence[object]) -> KeyRecord:
    name, key_hash, read, write, created_at = row
    return KeyRecord(
        str(name),
        str(key_hash),
        tuple(json.loads(str(read))),
        tuple(json.loads(str(write))),
        float(created_at),  # type: ignore[arg-type]
    )


def chunk_record(row: Sequence[object]) -> ChunkRecord:
    """A ChunkRecord from a row of `CHUNK_COLUMNS`."""
    chunk_id, document_id, ordinal, text, start, end, page, headings, token_count, *rest = row
    span = Span(start, end, tuple(json.loads(str(headings))), page)  # type: ignore[arg-type]
    return ChunkRecord(chunk_id, document_id, ordinal, text, span, token_count, *rest)  # type: ignore[arg-type]


def documents_query(
    document_id: int | None, path: str | None, mark: str, collections: Sequence[str] | None = None
) -> tuple[str, list[object]]:
    """The query behind `Catalog.find_documents`, with `mark` as the dialect's placeholder."""
    clauses, args = list[str](), list[object]()
    if document_id is not None:
        clauses, args = [f"d.id = {mark}"], [document_id]
    elif path is not None:
        clauses, args = [f"d.path = {mark}"], [path]
    if collections is not None:
        clauses.append(f"d.collection IN ({','.join([mark] * len(collections)) or 'NULL'})")
        args.extend(collections)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    query = (
        f"SELECT {DOCUMENT_COLUMNS}, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) "
        f"FROM documents d {where} ORDER BY d.path"
    )
    return query, args


def keyword_columns(title: str, heading_path: Sequence[str], text: str) -> tuple[str, str, str, str]:
    """A chunk's row in the keyword index: text, heading, title and grams columns.

    CJK runs are indexed in the grams column only; elsewhere they are cut out, so that a
    number or a Latin word written against Chinese text ("2022年", "RCEP协定") is a word of its own.
    """
    heading = " > ".join(heading_path)
    grams = index_grams(f"{title} {heading} {text}")
    return without_cjk(text), without_cjk(heading), without_cjk(title), grams
