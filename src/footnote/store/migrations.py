"""Catalog schema, as migrations applied in order and recorded in `schema_migrations`."""

from __future__ import annotations

import sqlite3
import time

from footnote.core.cjk import index_grams, without_cjk
from footnote.core.language import detect_language

# The keyword index's tokenizer, as the migrations below create it.
KEYWORD_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _fill_keyword_index(words: str) -> str:
    """SQL giving every chunk its row of the keyword index, each word column passed through the
    SQL function `words` ("" for none). footnote_* functions are registered by migrate()."""
    return f"""
        INSERT INTO chunks_fts (rowid, text, heading, title, grams)
        WITH headed AS (
            SELECT c.id, c.text, d.title, coalesce(
                (SELECT group_concat(value, ' > ') FROM json_each(c.heading_path)), ''
            ) AS heading
            FROM chunks c JOIN documents d ON d.id = c.document_id
        )
        SELECT id, {words}(text), {words}(heading), {words}(title),
            footnote_cjk_grams(title || ' ' || heading || ' ' || text)
        FROM headed;
        """


MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "documents, chunks, keyword index, vector bookkeeping",
        """
        -- AUTOINCREMENT: an id is never reused, so a tombstoned chunk id can never
        -- name a live chunk whose vector the next reconcile would then delete.
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL UNIQUE,
            content_hash TEXT NOT NULL,
            format TEXT NOT NULL,
            title TEXT NOT NULL,
            url TEXT,
            size INTEGER NOT NULL,
            mtime REAL NOT NULL,
            text TEXT NOT NULL,
            ingested_at REAL NOT NULL
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            text TEXT NOT NULL,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL,
            page INTEGER,
            heading_path TEXT NOT NULL,
            token_count INTEGER NOT NULL,
            embedded INTEGER NOT NULL DEFAULT 0,
            UNIQUE (document_id, ordinal)
        );
        CREATE INDEX chunks_pending ON chunks (embedded) WHERE embedded = 0;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, heading, title, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        -- Vectors of deleted chunks still to be removed from the vector index.
        CREATE TABLE vector_tombstones (chunk_id INTEGER PRIMARY KEY);
        """,
    ),
    (
        2,
        "keyword index: a grams column of CJK characters and bigrams",
        """
        -- FTS5 tables cannot gain a column: rebuild the index from the chunks.
        DROP TABLE chunks_fts;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, heading, title, grams, tokenize = 'porter unicode61 remove_diacritics 2'
        );
        """
        + _fill_keyword_index(""),
    ),
    (
        3,
        "a generation counter bumped whenever chunks are added or removed",
        """
        CREATE TABLE chunk_generation (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            value INTEGER NOT NULL
        );
        INSERT INTO chunk_generation (id, value) VALUES (1, 0);
        """,
    ),
    (
        4,
        "each chunk's language; Chinese grams are words; CJK runs only in the grams column",
        """
        ALTER TABLE chunks ADD COLUMN language TEXT NOT NULL DEFAULT '';
        UPDATE chunks SET language = footnote_language(text);
        -- Every row of the keyword index is made again, as `keyword_columns` now makes it.
        UPDATE chunk_generation SET value = value + 1;
        DELETE FROM chunks_fts;
        """
        + _fill_keyword_index("footnote_without_cjk"),
    ),
    (
        5,
        "each document's collection; scoped API keys, stored by their hash",
        """
        ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
        CREATE INDEX documents_collection ON documents (collection);
        CREATE TABLE api_keys (
            name TEXT PRIMARY KEY,
            key_hash TEXT NOT NULL UNIQUE,
            "read" TEXT NOT NULL,
            "write" TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        """,
    ),
]


def migrate(connection: sqlite3.Connection) -> int:
    """Apply pending migrations; returns the schema version now in force."""
    connection.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    connection.create_function("footnote_cjk_grams", 1, index_grams, deterministic=True)
    connection.create_function("footnote_language", 1, detect_language, deterministic=True)
    connection.create_function("footnote_without_cjk", 1, without_cjk, deterministic=True)
    applied = {row[0] for row in connection.execute("SELECT version FROM schema_migrations")}
    for version, description, script in MIGRATIONS:
        if version in applied:
            continue
        with connection:
            connection.executescript("BEGIN;" + script)
            connection.execute(
                "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
                (version, description, time.time()),
            )
    return max([v for v, _, _ in MIGRATIONS], default=0)
