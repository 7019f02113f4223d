"""Path claims of an ingest run on the PostgreSQL catalog, so that runs on other replicas leave
its files alone: session advisory locks, which go with the connection of a process that dies."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import psycopg

from footnote.store.catalog import PathClaims
from footnote.store.postgres_schema import connect, connection_error


class AdvisoryPathClaims(PathClaims):
    """Claims held as session advisory locks on a connection of their own: a process that dies
    loses its connection, and with it its claims, so another run picks the files up."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._connection: psycopg.Connection | None = None
        self._lock = threading.Lock()

    def take(self, path: str) -> bool:
        with self._lock:
            if self._connection is None:
                self._connection = connect(self._url)
            row = self._execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", path)
            return bool(row)

    def release(self, paths: Sequence[str]) -> None:
        with self._lock:
            for path in paths:
                if self._connection is not None:
                    self._execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", path)

    def _execute(self, query: str, path: str) -> object:
        assert self._connection is not None
        try:
            row = self._connection.execute(query, (path,)).fetchone()
        except psycopg.OperationalError as exc:
            raise connection_error(self._url, exc) from exc
        return row[0] if row else None

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
