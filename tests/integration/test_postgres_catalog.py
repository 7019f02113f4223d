"""The shared PostgreSQL catalog against a real server: migrations under a lock, the same keyword
ranking as the embedded catalog, changes followed by other replicas, and errors that name the fix."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.errors import StoreError, StoreUnavailable
from footnote.retrieval.keyword import keyword_phrases
from footnote.retrieval.postings import MemoryKeywordIndex
from footnote.store import postgres_schema, postgres_writes
from footnote.store.postgres import PostgresCatalog
from footnote.store.postgres_schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION
from footnote.store.records import DocumentEntry
from tests.conftest import REPO
from tests.fakes import HashingEmbedder
from tests.postgres_server import PASSWORD, PostgresServer, started_server
from tests.unit.test_catalog import NEW_TEXTS, OLD_TEXTS, store

WAIT_S = 30  # a bound on waits for another thread or replica, never a measured time

QUERIES = [
    "Fresnel lens lighthouse",
    "honey bees waggle dance",
    "spring tides moon",
    "volcano eruption lava",
    "the keeper of the light",
    "潮汐 月球",
    "2022年 RCEP协定",
]


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {WAIT_S} s")
        time.sleep(0.05)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(REPO / "examples" / "sample", folder)
    (folder / "zh.md").write_text(
        "# 潮汐\n\n潮汐是月球引力造成的。2022年 RCEP协定生效。\n\n## 大潮\n\n满月时潮汐最大。\n",
        encoding="utf-8",
    )
    (folder / "keeper.md").write_text(
        "# Keeper\n\nThe keeper of the light lit the lamp; the light shone over the sea.\n", encoding="utf-8"
    )
    return folder


def application(home: Path, catalog_url: str = "") -> Application:
    settings = Settings(home=home, catalog_url=catalog_url, chunk_tokens=60, chunk_overlap=10)
    return create_app(settings, embedder=HashingEmbedder())


# --- migrations ------------------------------------------------------------------------------


def test_a_replica_waits_for_the_migration_lock_and_migrates_once(catalog_url: str) -> None:
    opened: list[PostgresCatalog] = []
    with psycopg.connect(catalog_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        replicas = [
            threading.Thread(target=lambda: opened.append(PostgresCatalog(catalog_url))) for _ in "ab"
        ]
        for replica in replicas:
            replica.start()

        def both_wait() -> bool:
            query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            row = holder.execute(query).fetchone()
            return row is not None and row[0] == 2

        wait_for(both_wait, "both replicas waiting on the migration lock")
        assert holder.execute("SELECT to_regclass('documents')").fetchone() == (None,)
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        for replica in replicas:
            replica.join(WAIT_S)
        rows = holder.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    try:
        assert [row[0] for row in rows] == [version for version, _, _ in MIGRATIONS]
        assert [catalog.schema_version for catalog in opened] == [SCHEMA_VERSION, SCHEMA_VERSION]
    finally:
        for catalog in opened:
            catalog.close()


def test_a_schema_newer_than_this_footnote_is_refused_naming_both_versions(catalog_url: str) -> None:
    PostgresCatalog(catalog_url).close()
    with psycopg.connect(catalog_url, autocommit=True) as db:
        db.execute("INSERT INTO schema_migrations VALUES (%s, 'from the future', 0)", (SCHEMA_VERSION + 7,))

    with pytest.raises(StoreError) as caught:
        PostgresCatalog(catalog_url)

    message = str(caught.value)
    assert f"version {SCHEMA_VERSION + 7}" in message and f"version {SCHEMA_VERSION}," in message
    assert "upgrade footnote" in message and PASSWORD not in message


# --- keyword search --------------------------------------------------------------------------


def test_keyword_ranking_is_the_embedded_ranking(tmp_path: Path, corpus: Path, catalog_url: str) -> None:
    embedded = application(tmp_path / "embedded")
    shared = application(tmp_path / "shared", catalog_url)
    try:
        embedded.ingest([corpus])
        shared.ingest([corpus])
        assert not shared.catalog.searches_keywords
        for query in QUERIES:
            # The embedded catalog answers from FTS5 here (no postings kept); the shared one from postings.
            fts5 = [(h.path, h.start, round(h.score, 9)) for h in embedded.search(query, 20, "keyword")]
            postings = [(h.path, h.start, round(h.score, 9)) for h in shared.search(query, 20, "keyword")]
            assert fts5, query
            assert postings == fts5, query
    finally:
        embedded.close()
        shared.close()


def test_a_filtered_keyword_search_keeps_only_what_the_filter_allows(
    tmp_path: Path, corpus: Path, catalog_url: str
) -> None:
    from footnote.core.filters import SearchFilter

    embedded = application(tmp_path / "embedded")
    shared = application(tmp_path / "shared", catalog_url)
    try:
        embedded.ingest([corpus])
        shared.ingest([corpus])
        only = SearchFilter(include_paths=("*/lighthouses.md",))
        for app in (embedded, shared):
            hits = app.search("the light", 20, "keyword", filters=only)
            assert hits and {Path(h.path).name for h in hits} == {"lighthouses.md"}
        scores = [
            [round(h.score, 9) for h in a.search("the light", 20, "keyword", only)]
            for a in (embedded, shared)
        ]
        assert scores[0] == scores[1]
    finally:
        embedded.close()
        shared.close()


# --- following other replicas -----------------------------------------------------------------


@pytest.fixture
def two_replicas(catalog_url: str) -> Iterator[tuple[PostgresCatalog, PostgresCatalog]]:
    writer, reader = PostgresCatalog(catalog_url), PostgresCatalog(catalog_url)
    yield writer, reader
    writer.close()
    reader.close()


def test_another_replicas_ingest_and_delete_reach_the_postings(
    two_replicas: tuple[PostgresCatalog, PostgresCatalog],
) -> None:
    writer, reader = two_replicas
    postings = MemoryKeywordIndex(reader)
    postings.sync()
    reader.on_change(postings.catch_up)
    phrases = keyword_phrases("lighthouses")

    document_id = store(writer, "/docs/a.md", OLD_TEXTS)
    # Followed without a search asking: the NOTIFY (or the poll) woke the reader's listener.
    wait_for(lambda: postings.generation == writer.generation(), "the reader catching up on an ingest")
    found = postings.search(phrases, 10)
    assert found is not None and [reader.chunks([i])[i].document_id for i, _ in found] == [document_id]

    writer.delete_document(document_id)
    wait_for(lambda: postings.generation == writer.generation(), "the reader catching up on a delete")
    assert postings.search(phrases, 10) == []


def test_postings_follow_a_replacement_through_the_change_log(
    two_replicas: tuple[PostgresCatalog, PostgresCatalog],
) -> None:
    writer, reader = two_replicas
    store(writer, "/docs/keep.md", ["Coffee grows in Africa."] * 3)
    postings = MemoryKeywordIndex(reader)
    postings.sync()
    store(writer, "/docs/a.md", OLD_TEXTS)
    store(writer, "/docs/a.md", NEW_TEXTS, content_hash="h2")

    rebuilt = MemoryKeywordIndex(reader)
    for query in ("tides", "lighthouses", "coffee", "moon smallest"):
        phrases = keyword_phrases(query)
        assert postings.search_now(phrases, 10) == rebuilt.search_now(phrases, 10), query


def test_the_change_log_is_pruned_and_postings_older_than_it_compare_ids(
    two_replicas: tuple[PostgresCatalog, PostgresCatalog], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_writes, "CHANGE_LOG_GENERATIONS", 3)
    monkeypatch.setattr(postgres_writes, "PRUNE_EVERY", 2)
    writer, reader = two_replicas
    store(writer, "/docs/keep.md", ["Coffee grows in Africa."] * 3)
    postings = MemoryKeywordIndex(reader)
    postings.sync()
    seen = reader.generation()
    store(writer, "/docs/a.md", OLD_TEXTS)
    store(writer, "/docs/a.md", NEW_TEXTS, content_hash="h2")
    for round in range(4):
        writer.delete_document(store(writer, "/docs/b.md", [f"Volcano number {round} erupts."]))
    last = writer.generation()

    with psycopg.connect(writer.url) as connection:
        kept = [row[0] for row in connection.execute("SELECT DISTINCT generation FROM chunk_changes")]
    assert kept and min(kept) > last - 3 - 2 and min(kept) > seen + 1  # bounded, and what `seen` needs gone
    assert reader.changes_since(seen) is None
    latest = reader.changes_since(last - 1)
    assert latest is not None and latest.added == () and len(latest.removed) == 1

    postings.sync()  # the change log no longer reaches back to its generation: ids are compared

    rebuilt = MemoryKeywordIndex(reader)
    for query in ("tides", "lighthouses", "coffee", "volcano", "moon smallest"):
        phrases = keyword_phrases(query)
        assert postings.search_now(phrases, 10) == rebuilt.search_now(phrases, 10), query
    assert postings.search_now(keyword_phrases("tides"), 10)


def test_a_catalog_of_the_first_schema_is_migrated_and_keeps_its_change_log(
    catalog_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_schema, "MIGRATIONS", MIGRATIONS[:1])
    monkeypatch.setattr(postgres_schema, "SCHEMA_VERSION", 1)
    # The first schema's documents had no collection: they are written as footnote wrote them then.
    full_row = DocumentEntry.row
    monkeypatch.setattr(DocumentEntry, "COLUMNS", DocumentEntry.COLUMNS.removesuffix(", collection"))
    monkeypatch.setattr(DocumentEntry, "row", lambda entry, at: full_row(entry, at)[:-1])
    first = PostgresCatalog(catalog_url)
    document_id = store(first, "/docs/a.md", OLD_TEXTS)
    first.close()
    monkeypatch.undo()

    upgraded = PostgresCatalog(catalog_url)
    try:
        changes = upgraded.changes_since(0)
        assert upgraded.schema_version == SCHEMA_VERSION == 3
        assert changes is not None and sorted(changes.added) == sorted(
            r.id for r in upgraded.chunks(upgraded.chunk_id_list()).values() if r.document_id == document_id
        )
        # The documents stored before collections existed are in the default one.
        assert [(c.name, c.documents) for c in upgraded.collections()] == [("default", 1)]
    finally:
        upgraded.close()


# --- errors ----------------------------------------------------------------------------------


def test_an_unreachable_database_is_one_line_naming_the_url_and_the_setting(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url().replace(f":{postgres_server.port}/", f":{closed_port()}/")

    with pytest.raises(StoreUnavailable) as caught:
        PostgresCatalog(url)

    message = str(caught.value)
    assert message.startswith("FOOTNOTE_CATALOG_URL=postgresql://footnote@127.0.0.1:")
    assert "\n" not in message and PASSWORD not in message
    assert "start PostgreSQL" in message


def test_a_wrong_password_says_to_check_it(postgres_server: PostgresServer) -> None:
    with pytest.raises(StoreError) as caught:
        PostgresCatalog(postgres_server.url(password="not-the-password"))

    message = str(caught.value)
    assert "check the user and password in FOOTNOTE_CATALOG_URL" in message
    assert "not-the-password" not in message and not isinstance(caught.value, StoreUnavailable)


def test_a_missing_database_says_how_to_create_it(postgres_server: PostgresServer) -> None:
    with pytest.raises(StoreError) as caught:
        PostgresCatalog(postgres_server.url("no_such_catalog"))

    assert "database no_such_catalog does not exist; create it with `createdb no_such_catalog`" in str(
        caught.value
    )


def test_losing_the_database_mid_request_is_store_unavailable() -> None:
    server = started_server()
    cluster = next(server)
    catalog = PostgresCatalog(cluster.create_database("lost"))
    try:
        store(catalog, "/docs/a.md", OLD_TEXTS)
        cluster.stop(mode="immediate")

        with pytest.raises(StoreUnavailable) as caught:
            catalog.list_documents()
        with pytest.raises(StoreUnavailable):
            store(catalog, "/docs/b.md", NEW_TEXTS)

        assert caught.value.setting == "FOOTNOTE_CATALOG_URL" and caught.value.retry_after > 0
        cluster.start()

        def recovered() -> bool:
            try:
                return [d.path for d in catalog.list_documents()] == ["/docs/a.md"]
            except StoreUnavailable:  # the pool reconnects in the background, backing off
                return False

        wait_for(recovered, "the catalog reconnecting to the restarted database")
    finally:
        catalog.close()
        server.close()


def closed_port() -> int:
    from tests.postgres_server import free_port

    return free_port()
