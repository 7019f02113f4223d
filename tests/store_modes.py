"""Where the tests' indexes live: the embedded stores, or fresh shared ones on the run's servers.

In the shared mode every test gets a database of its own on the run's PostgreSQL cluster and a
collection of its own on the run's Chroma server, named through the same settings a deployment
uses, so every `Settings()` a test builds (and every `footnote` process it starts) opens them.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import psycopg
import pytest

from footnote.config import Settings
from footnote.store.postgres import PostgresCatalog

if TYPE_CHECKING:
    from tests.chroma_server import ChromaServer
    from tests.postgres_server import PostgresServer

StoreMode = Literal["embedded", "shared"]
# The settings that name the shared stores, as environment variables and as Settings fields.
STORE_SETTINGS = {
    "FOOTNOTE_CATALOG_URL": "catalog_url",
    "FOOTNOTE_VECTOR_URL": "vector_url",
    "FOOTNOTE_VECTOR_COLLECTION": "vector_collection",
}


def store_mode(value: str) -> StoreMode:
    mode = value.strip().lower() or "embedded"
    if mode == "embedded" or mode == "shared":
        return mode
    raise pytest.UsageError(f"FOOTNOTE_TEST_STORES={value!r}: set it to `embedded` (the default) or `shared`")


class RunStores:
    """The run's store mode; in the shared mode, its servers and the stores handed out on them."""

    def __init__(self, postgres: PostgresServer | None, chroma: ChromaServer | None) -> None:
        self.postgres = postgres
        self.chroma = chroma
        self._names = itertools.count()
        self._lasting: list[tuple[str, str]] = []
        self._admin: psycopg.Connection[Any] | None = None
        self._unused: tuple[str, str] | None = None  # stores a test was given and never touched
        self._client: Any = None

    @property
    def shared(self) -> bool:
        return self.postgres is not None

    @contextmanager
    def fresh(self, name: str) -> Iterator[dict[str, str]]:
        """Environment variables naming new, empty stores for one test (none in the embedded mode),
        removed when the test ends. Most tests never open them: those a test left untouched go to
        the next test, since creating a database costs more than many a test takes."""
        if not self.shared:
            yield {}
            return
        database, collection = self._unused or self._create()
        self._unused = None
        opened: list[PostgresCatalog] = []
        try:
            with _recording_catalogs(opened):
                yield self._environment(database, collection)
        finally:
            _close_in_background(opened)
            if self._untouched(database):
                self._unused = database, collection
                self._delete_collections(collection)  # a collection is made by opening it
            else:
                self._remove(database, collection)

    def lasting(self, home: Path) -> dict[str, str]:
        """Like `fresh`, for a fixture's index in `home` that outlives one test (`stores_of(home)`
        finds them again); the stores go when the run ends."""
        if not self.shared:
            return {}
        database, collection = self._create()
        self._lasting.append((database, collection))
        _HOMES[home] = self._environment(database, collection)
        return _HOMES[home]

    def close(self) -> None:
        for database, collection in [*self._lasting, *([self._unused] if self._unused else [])]:
            self._remove(database, collection)
        self._drop_admin()

    def _create(self) -> tuple[str, str]:
        number = next(self._names)
        database = f"stores_{number}"
        admin = self._admin_connection()
        # Copying the template's files takes a tenth of the time of PostgreSQL 15's default (WAL_LOG).
        strategy = " STRATEGY FILE_COPY" if admin.info.server_version >= 150000 else ""
        admin.execute(f'CREATE DATABASE "{database}"{strategy}')
        return database, f"test-{number}"

    def _environment(self, database: str, collection: str) -> dict[str, str]:
        assert self.postgres is not None and self.chroma is not None
        return {
            "FOOTNOTE_CATALOG_URL": self.postgres.url(database),
            "FOOTNOTE_VECTOR_URL": self.chroma.url,
            "FOOTNOTE_VECTOR_COLLECTION": collection,
        }

    def _untouched(self, database: str) -> bool:
        """No connection to `database` is left, and it holds no table: nothing opened it as a catalog."""
        assert self.postgres is not None
        try:
            admin = self._admin_connection()
            connected = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
            row = admin.execute(connected, [database]).fetchone()
            if row is None or row[0]:
                return False
            with psycopg.connect(self.postgres.url(database), autocommit=True) as connection:
                held = "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                tables = connection.execute(held).fetchone()
            return tables is not None and tables[0] == 0
        except psycopg.Error:
            return False

    def _remove(self, database: str, collection: str) -> None:
        # FORCE: a test may leave an application (and its connection pool) open.
        try:
            self._admin_connection().execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        except psycopg.OperationalError:  # the test stopped the cluster: the next call reconnects
            self._drop_admin()
        self._delete_collections(collection)

    def _delete_collections(self, collection: str) -> None:
        """The test's collection and the language index's beside it, where they exist (a test may
        have stopped the server or dropped them itself)."""
        language = Settings.model_construct(vector_collection=collection).language_vector_collection
        for name in (collection, language):
            with contextlib.suppress(Exception):
                self._chroma_client().delete_collection(name)

    def _admin_connection(self) -> psycopg.Connection[Any]:
        assert self.postgres is not None
        if self._admin is None or self._admin.closed or self._admin.broken:
            self._admin = psycopg.connect(self.postgres.url(), autocommit=True)
        return self._admin

    def _drop_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(psycopg.Error):
                self._admin.close()
        self._admin = None

    def _chroma_client(self) -> Any:
        import chromadb

        assert self.chroma is not None
        if self._client is None:
            self._client = chromadb.HttpClient(host="127.0.0.1", port=self.chroma.port)
        return self._client


@contextmanager
def _recording_catalogs(opened: list[PostgresCatalog]) -> Iterator[None]:
    """Note every PostgreSQL catalog opened in the block: a test may leave one open."""
    original = PostgresCatalog.__init__

    def recording(catalog: PostgresCatalog, *args: Any, **options: Any) -> None:
        original(catalog, *args, **options)
        opened.append(catalog)

    PostgresCatalog.__init__ = recording  # type: ignore[method-assign]
    try:
        yield
    finally:
        PostgresCatalog.__init__ = original  # type: ignore[method-assign]


def _close_in_background(catalogs: list[PostgresCatalog]) -> None:
    """Close what a test left open, so that its pool and change listener do not outlive its database
    (a listener takes up to a second to notice: the next test need not wait for it)."""
    if catalogs:
        closing = [threading.Thread(target=catalog.close, daemon=True) for catalog in catalogs]
        for thread in closing:
            thread.start()


_HOMES: dict[Path, dict[str, str]] = {}
_RUN: list[RunStores] = []  # the run's stores, once the session fixture has made them


def begin_run(stores: RunStores) -> RunStores:
    _RUN[:] = [stores]
    return stores


def lasting_stores(home: Path) -> dict[str, str]:
    """For a fixture that outlives one test: the environment naming the stores of the index in
    `home` (new ones in the shared mode, none in the embedded mode)."""
    assert _RUN, "the test_stores fixture is made before any test's fixtures"
    return _RUN[0].lasting(home)


def lasting_settings(home: Path) -> dict[str, str]:
    """`lasting_stores(home)` as keyword arguments of `Settings`."""
    return as_settings(lasting_stores(home))


def stores_of(home: Path) -> dict[str, str]:
    """The environment naming the stores a fixture gave the index in `home` (empty for any other
    home: a test's own index is in the stores its environment already names)."""
    return _HOMES.get(home, {})


def as_settings(environment: dict[str, str]) -> dict[str, str]:
    """The same stores as keyword arguments of `Settings`."""
    return {STORE_SETTINGS[name]: value for name, value in environment.items()}
