"""The shared catalog's writes in one transaction: documents and chunks copied in, rows deleted
with their vectors tombstoned, and each commit's changes logged under a new generation and
announced to the replicas' listeners (`footnote.store.postgres`)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import psycopg

from footnote.core.language import detect_language
from footnote.store.records import DocumentEntry

CHANGES_CHANNEL = "footnote_chunk_changes"
# The change log keeps the last CHANGE_LOG_GENERATIONS generations, pruned every PRUNE_EVERY
# commits. A replica follows within about a second, so only one whose postings are older than
# that (down for a long while, or loaded from an old postings file) needs more; it compares
# every chunk id instead.
CHANGE_LOG_GENERATIONS = 10_000
PRUNE_EVERY = 100
CHUNK_FIELDS = (
    'id, document_id, ordinal, text, start, "end", page, heading_path, token_count, embedded, language'
)
DOCUMENT_FIELDS = "id, path, content_hash, format, title, url, size, mtime, text, ingested_at, collection"


def insert_document(connection: psycopg.Connection, entry: DocumentEntry) -> int:
    values = entry.row(time.time())
    marks = ", ".join(["%s"] * len(values))
    row = connection.execute(
        f"INSERT INTO documents ({DocumentEntry.COLUMNS}) VALUES ({marks}) RETURNING id", values
    ).fetchone()
    assert row is not None
    return int(row[0])


def insert_chunks(
    connection: psycopg.Connection, document_id: int, entry: DocumentEntry, embedded: bool
) -> list[int]:
    """Copy the entry's chunks in under ids drawn from the sequence beforehand; returns them."""
    if not entry.chunks:
        return []
    ids = [
        int(row[0])
        for row in connection.execute(
            "SELECT nextval('chunks_id_seq') FROM generate_series(1, %s)", (len(entry.chunks),)
        )
    ]
    rows = [
        (chunk_id, document_id, chunk.ordinal, chunk.text, chunk.start, chunk.end, chunk.page,
         json.dumps(list(chunk.heading_path)), chunk.token_count, embedded, detect_language(chunk.text))
        for chunk_id, chunk in zip(ids, entry.chunks, strict=True)
    ]  # fmt: skip
    copy_rows(connection, "chunks", CHUNK_FIELDS, rows)
    return ids


def delete_rows(connection: psycopg.Connection, document_ids: list[int]) -> tuple[int, list[int]]:
    """Delete documents and their chunks, tombstoning the chunks' vectors; returns (documents
    deleted, chunk ids removed)."""
    removed = [
        int(row[0])
        for row in connection.execute(
            "DELETE FROM chunks WHERE document_id = ANY(%s) RETURNING id", (document_ids,)
        )
    ]
    connection.execute(
        "INSERT INTO vector_tombstones (chunk_id) SELECT unnest(%s::bigint[]) ON CONFLICT DO NOTHING",
        (removed,),
    )
    deleted = connection.execute("DELETE FROM documents WHERE id = ANY(%s)", (document_ids,)).rowcount
    return deleted, removed


def record_changes(connection: psycopg.Connection, added: list[int], removed: list[int]) -> None:
    """Move the generation on (its row stays locked until the commit) and log the changes."""
    row = connection.execute("UPDATE chunk_generation SET value = value + 1 RETURNING value").fetchone()
    assert row is not None
    generation = int(row[0])
    rows = [(generation, i, False) for i in removed] + [(generation, i, True) for i in added]
    copy_rows(connection, "chunk_changes", "generation, chunk_id, added", rows)
    if generation % PRUNE_EVERY == 0 and generation > CHANGE_LOG_GENERATIONS:
        prune_changes(connection, generation - CHANGE_LOG_GENERATIONS)
    connection.execute("SELECT pg_notify(%s, %s)", (CHANGES_CHANNEL, str(generation)))


def prune_changes(connection: psycopg.Connection, through: int) -> None:
    """Delete the change log up to generation `through`, and say so for `changes_since`. Runs
    in a commit's transaction, under the generation row's lock, so prunes never interleave."""
    connection.execute("DELETE FROM chunk_changes WHERE generation <= %s", (through,))
    connection.execute(
        "UPDATE chunk_generation SET pruned_through = GREATEST(pruned_through, %s)", (through,)
    )


def copy_rows(
    connection: psycopg.Connection, table: str, fields: str, rows: Sequence[Sequence[object]]
) -> None:
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({fields}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
