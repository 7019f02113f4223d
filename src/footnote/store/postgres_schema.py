"""The PostgreSQL catalog's schema, its migrations, and connecting with errors that say the fix.

Migrations are applied under an advisory lock, so that of many replicas starting at
once one migrates and the others wait, then find nothing left to do. A replica that
finds a schema newer than the migrations it knows refuses to start rather than write
rows that newer replicas would misread.
"""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit, urlunsplit

import psycopg

from footnote import __version__
from footnote.errors import StoreError, StoreUnavailable

SETTING = "FOOTNOTE_CATALOG_URL"
CONNECT_TIMEOUT_S = 5
STATEMENT_TIMEOUT_MS = 30_000
MIGRATION_LOCK = 0x666F6F74  # the advisory-lock key migrations are applied under ("foot")

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "documents, chunks, vector bookkeeping, the generation counter and the change log",
        """
        CREATE TABLE documents (
            id BIGSERIAL PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            content_hash TEXT NOT NULL,
            format TEXT NOT NULL,
            title TEXT NOT NULL,
            url TEXT,
            size BIGINT NOT NULL,
            mtime DOUBLE PRECISION NOT NULL,
            text TEXT NOT NULL,
            ingested_at DOUBLE PRECISION NOT NULL
        );
        -- Ids come from sequences and are never reused, so a tombstoned chunk id can never
        -- name a live chunk whose vector the next reconcile would then delete.
        CREATE TABLE chunks (
            id BIGSERIAL PRIMARY KEY,
            document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            text TEXT NOT NULL,
            start INTEGER NOT NULL,
            "end" INTEGER NOT NULL,
            page INTEGER,
            heading_path TEXT NOT NULL,
            token_count INTEGER NOT NULL,
            embedded BOOLEAN NOT NULL DEFAULT FALSE,
            language TEXT NOT NULL DEFAULT '',
            UNIQUE (document_id, ordinal)
        );
        CREATE INDEX chunks_pending ON chunks (id) WHERE NOT embedded;
        CREATE TABLE vector_tombstones (chunk_id BIGINT PRIMARY KEY);
        CREATE TABLE chunk_generation (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            value BIGINT NOT NULL
        );
        INSERT INTO chunk_generation (id, value) VALUES (1, 0);
        -- Every chunk added or removed, under the generation that committed it: replicas
        -- apply the rows past the generation their keyword postings were built at.
        CREATE TABLE chunk_changes (
            id BIGSERIAL PRIMARY KEY,
            generation BIGINT NOT NULL,
            chunk_id BIGINT NOT NULL,
            added BOOLEAN NOT NULL
        );
        CREATE INDEX chunk_changes_generation ON chunk_changes (generation);
        """,
    ),
    (
        2,
        "the generation through which the change log has been pruned",
        """
        -- Rows of generations up to this one are deleted: a replica whose postings are older
        -- compares every chunk id instead of reading the change log.
        ALTER TABLE chunk_generation ADD COLUMN pruned_through BIGINT NOT NULL DEFAULT 0;
        """,
    ),
    (
        3,
        "each document's collection; scoped API keys, stored by their hash",
        """
        ALTER TABLE documents ADD COLUMN collection TEXT NOT NULL DEFAULT 'default';
        CREATE INDEX documents_collection ON documents (collection);
        CREATE TABLE api_keys (
            name TEXT PRIMARY KEY,
            key_hash TEXT NOT NULL UNIQUE,
            "read" TEXT NOT NULL,
            "write" TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        );
        """,
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def shown_url(url: str) -> str:
    """`url` fit to print: its password (in the URL or a `password=` pair) left out."""
    parts = urlsplit(url)
    if parts.scheme and parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        user = parts.username or ""
        return urlunsplit(parts._replace(netloc=f"{user}@{host}" if user else host))
    return re.sub(r"password\s*=\s*('[^']*'|\S+)", "password=***", url)


def connection_error(url: str, exc: psycopg.Error) -> StoreError:
    """What a failed connection means, as one line that names the setting and the fix."""
    shown = shown_url(url)
    problem = " ".join(str(exc).split())
    missing = re.search(r'database "([^"]+)" does not exist', problem)
    if missing:
        name = missing.group(1)
        return StoreError(
            f"{SETTING}={shown}: database {name} does not exist; create it with `createdb {name}` "
            f"or point {SETTING} at an existing database"
        )
    if "password authentication failed" in problem or "no password supplied" in problem:
        return StoreError(
            f"{SETTING}={shown}: the database refused the login ({problem}); "
            f"check the user and password in {SETTING}"
        )
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreUnavailable(
        SETTING,
        shown,
        f"cannot reach the catalog database ({first_line}); start PostgreSQL or fix the host and port",
    )


def connection_options() -> dict[str, object]:
    """Connection settings that keep a lost database from hanging a request."""
    return {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }


def connect(url: str, autocommit: bool = True) -> psycopg.Connection:
    try:
        return psycopg.connect(url, autocommit=autocommit, **connection_options())  # type: ignore[arg-type]
    except psycopg.Error as exc:
        raise connection_error(url, exc) from None


def migrate(connection: psycopg.Connection, url: str) -> int:
    """Apply pending migrations under the migration lock; returns the schema version in force."""
    connection.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "description TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        applied = {int(row[0]) for row in connection.execute("SELECT version FROM schema_migrations")}
        newest = max(applied, default=0)
        if newest > SCHEMA_VERSION:
            raise StoreError(
                f"{SETTING}={shown_url(url)}: the catalog's schema is version {newest}, newer than "
                f"version {SCHEMA_VERSION}, the newest this footnote {__version__} knows; "
                "upgrade footnote on this replica to the version the others run"
            )
        for version, description, script in MIGRATIONS:
            if version in applied:
                continue
            with connection.transaction():
                connection.execute(script)
                connection.execute(
                    "INSERT INTO schema_migrations (version, description, applied_at) VALUES (%s, %s, %s)",
                    (version, description, time.time()),
                )
    finally:
        connection.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return SCHEMA_VERSION
