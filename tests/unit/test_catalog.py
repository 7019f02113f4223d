"""The catalog contract, run against both implementations (SQLite, and PostgreSQL where it is
installed): atomic document replacement, tombstones, the pending queue, the change log; and
what only SQLite has (its migrations, WAL, FTS5)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from footnote.core.document import Chunk, Document
from footnote.core.filters import SearchFilter
from footnote.core.span import Span
from footnote.errors import StoreError
from footnote.retrieval.postings import MemoryKeywordIndex
from footnote.store.catalog import Catalog
from footnote.store.migrations import MIGRATIONS, migrate
from footnote.store.postgres import PostgresCatalog
from footnote.store.records import ChunkChanges, ChunkRecord
from footnote.store.sqlite import SqliteCatalog

OLD_TEXTS = ["Lighthouses guide sailors at night.", "Fresnel lenses focus the beam."]
NEW_TEXTS = ["Tides follow the moon.", "Spring tides are the largest.", "Neap tides are the smallest."]


def make_document(
    path: str,
    texts: list[str],
    title: str = "Notes",
    headings: tuple[str, ...] = ("Notes", "Section"),
    url: str | None = None,
) -> tuple[Document, list[Chunk]]:
    """A document whose text is `texts` joined by blank lines, one chunk per text with exact spans."""
    text = "\n\n".join(texts)
    chunks = []
    start = 0
    for ordinal, chunk_text in enumerate(texts):
        end = start + len(chunk_text)
        assert text[start:end] == chunk_text
        chunks.append(Chunk(ordinal, chunk_text, Span(start, end, headings, page=ordinal + 1), token_count=7))
        start = end + 2
    return Document(path, "markdown", title, text, url=url), chunks


def store(catalog: Catalog, path: str, texts: list[str], content_hash: str = "hash", **fields: object) -> int:
    document, chunks = make_document(path, texts, **fields)  # type: ignore[arg-type]
    return catalog.replace_document(document, content_hash, len(document.text), 1700000000.0, chunks)


def found(catalog: Catalog, word: str) -> set[int]:
    """Chunks holding `word`: from FTS5 where the catalog has it, else from keyword postings."""
    if catalog.searches_keywords:
        return {chunk_id for chunk_id, _ in catalog.keyword_search(f'"{word}"', 50)}
    return {chunk_id for chunk_id, _ in MemoryKeywordIndex(catalog).search_now([(None, word)], 50)}


def chunk_ids(catalog: Catalog, document_id: int) -> list[int]:
    records = catalog.chunks(catalog.chunk_id_list()).values()
    return [r.id for r in sorted(records, key=lambda r: r.ordinal) if r.document_id == document_id]


# A replacement that breaks the schema's rules fails with the database's own integrity error.
IntegrityError = (sqlite3.IntegrityError, psycopg.IntegrityError)


@pytest.fixture(params=["sqlite", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    if request.param == "sqlite":
        opened: Catalog = SqliteCatalog(tmp_path / "data" / "catalog.sqlite3")
    else:
        opened = PostgresCatalog(request.getfixturevalue("catalog_url"))
    yield opened
    opened.close()


@pytest.fixture
def sqlite_catalog(tmp_path: Path) -> Iterator[SqliteCatalog]:
    catalog = SqliteCatalog(tmp_path / "data" / "catalog.sqlite3")
    yield catalog
    catalog.close()


def reopened(catalog: Catalog) -> Catalog:
    """The same catalog opened again, on connections of its own."""
    if isinstance(catalog, PostgresCatalog):
        return PostgresCatalog(catalog.url)
    assert isinstance(catalog, SqliteCatalog)
    return SqliteCatalog(catalog.path)


# --- opening -------------------------------------------------------------------------------


def test_migrations_are_recorded(sqlite_catalog: SqliteCatalog) -> None:
    catalog = sqlite_catalog
    with closing(sqlite3.connect(catalog.path)) as db:
        rows = db.execute("SELECT version, description FROM schema_migrations ORDER BY version").fetchall()
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    assert rows == [(version, description) for version, description, _ in MIGRATIONS]
    assert catalog.schema_version == MIGRATIONS[-1][0]
    assert {"documents", "chunks", "chunks_fts", "vector_tombstones", "schema_migrations"} <= tables


def test_reopening_applies_no_migration_twice_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    first = SqliteCatalog(path)
    document_id = store(first, "/docs/a.md", OLD_TEXTS)
    first.close()

    second = SqliteCatalog(path)
    try:
        with closing(sqlite3.connect(path)) as db:
            count = db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0]
        assert count == len(MIGRATIONS)
        assert second.schema_version == MIGRATIONS[-1][0]
        assert second.document_text(document_id) == "\n\n".join(OLD_TEXTS)
        assert len(found(second, "lighthouses")) == 1
    finally:
        second.close()


def test_migrate_is_idempotent_on_one_connection(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "raw.sqlite3", isolation_level=None)
    try:
        assert migrate(db) == migrate(db) == MIGRATIONS[-1][0]
        assert db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(MIGRATIONS)
    finally:
        db.close()


def test_journal_mode_is_wal(sqlite_catalog: SqliteCatalog) -> None:
    catalog = sqlite_catalog
    with closing(sqlite3.connect(catalog.path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_creates_missing_parent_folders(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "catalog.sqlite3"
    SqliteCatalog(path).close()
    assert path.is_file()


def test_a_file_that_is_not_sqlite_is_refused_with_a_fix(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    path.write_bytes(b"this is not a database, just some garbage bytes \x00\xff\x13" * 64)

    with pytest.raises(StoreError) as caught:
        SqliteCatalog(path)

    message = str(caught.value)
    assert str(path) in message
    assert "move it aside and ingest again" in message
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


# --- storing and replacing documents ------------------------------------------------------


def test_replace_document_stores_document_chunks_and_keyword_rows(catalog: Catalog) -> None:
    document_id = store(catalog, "/docs/a.md", OLD_TEXTS, content_hash="h1", url="https://example.org/a")

    record = catalog.document_by_path("/docs/a.md")
    assert record is not None
    assert record.id == document_id
    assert (record.content_hash, record.format, record.title, record.url) == (
        "h1",
        "markdown",
        "Notes",
        "https://example.org/a",
    )
    assert record.chunk_count == 2
    assert catalog.document(document_id) == record
    assert catalog.list_documents() == [record]
    assert catalog.document_text(document_id) == "\n\n".join(OLD_TEXTS)
    assert catalog.count_chunks() == 2
    ids = chunk_ids(catalog, document_id)
    assert found(catalog, "lighthouses") == {ids[0]}
    assert found(catalog, "fresnel") == {ids[1]}
    assert found(catalog, "section") == set(ids)  # the heading path is indexed too
    assert catalog.tombstones() == []


def test_replacing_a_path_swaps_old_chunks_for_new(catalog: Catalog) -> None:
    old_id = store(catalog, "/docs/a.md", OLD_TEXTS, content_hash="h1")
    old_chunks = chunk_ids(catalog, old_id)

    new_id = store(catalog, "/docs/a.md", NEW_TEXTS, content_hash="h2")

    record = catalog.document_by_path("/docs/a.md")
    assert record is not None and record.id == new_id
    assert record.content_hash == "h2"
    assert record.chunk_count == 3
    assert len(catalog.list_documents()) == 1
    assert catalog.count_chunks() == 3
    assert sorted(catalog.tombstones()) == sorted(old_chunks)
    assert found(catalog, "lighthouses") == set()
    assert found(catalog, "fresnel") == set()
    new_chunks = chunk_ids(catalog, new_id)
    assert found(catalog, "tides") == set(new_chunks)
    assert [r.text for r in catalog.chunks(new_chunks).values()] == NEW_TEXTS
    assert catalog.document_text(new_id) == "\n\n".join(NEW_TEXTS)


def test_new_chunks_never_reuse_a_tombstoned_id(catalog: Catalog) -> None:
    store(catalog, "/docs/a.md", OLD_TEXTS, content_hash="h1")
    new_id = store(catalog, "/docs/a.md", NEW_TEXTS, content_hash="h2")

    live = set(chunk_ids(catalog, new_id))

    # A tombstone is a promise to delete that id's vector later; it must never name a live chunk.
    assert live.isdisjoint(catalog.tombstones())


def test_replacing_one_document_leaves_others_alone(catalog: Catalog) -> None:
    other_id = store(catalog, "/docs/other.md", ["Coffee grows in Africa."])
    store(catalog, "/docs/a.md", OLD_TEXTS)
    store(catalog, "/docs/a.md", NEW_TEXTS, content_hash="h2")

    assert catalog.document_text(other_id) == "Coffee grows in Africa."
    assert found(catalog, "coffee") == set(chunk_ids(catalog, other_id))
    assert catalog.count_chunks() == 4


def test_a_failed_replacement_rolls_back_and_keeps_the_previous_version(catalog: Catalog) -> None:
    old_id = store(catalog, "/docs/a.md", OLD_TEXTS, content_hash="h1")
    old_chunks = chunk_ids(catalog, old_id)
    document, chunks = make_document("/docs/a.md", NEW_TEXTS)
    duplicate_ordinals = [
        chunks[0],
        chunks[1],
        Chunk(1, chunks[2].text, Span(chunks[2].start, chunks[2].end)),
    ]

    with pytest.raises(IntegrityError):
        catalog.replace_document(document, "h2", 1, 0.0, duplicate_ordinals)

    record = catalog.document_by_path("/docs/a.md")
    assert record is not None
    assert (record.id, record.content_hash, record.chunk_count) == (old_id, "h1", 2)
    assert chunk_ids(catalog, old_id) == old_chunks
    assert catalog.document_text(old_id) == "\n\n".join(OLD_TEXTS)
    assert found(catalog, "lighthouses") == {old_chunks[0]}
    assert found(catalog, "tides") == set()
    assert catalog.tombstones() == []
    assert catalog.count_chunks() == 2
    assert catalog.count_pending() == 2


def test_the_catalog_stays_usable_after_a_rolled_back_replacement(catalog: Catalog) -> None:
    document, chunks = make_document("/docs/new.md", NEW_TEXTS)

    with pytest.raises(IntegrityError):
        catalog.replace_document(document, "h", 1, 0.0, [chunks[0], chunks[0]])

    assert catalog.document_by_path("/docs/new.md") is None
    assert catalog.count_chunks() == 0
    assert found(catalog, "tides") == set()
    # No transaction was left open: the next write commits and another connection sees it.
    document_id = store(catalog, "/docs/new.md", NEW_TEXTS)
    again = reopened(catalog)
    try:
        assert again.count_chunks() == 3
        assert again.document(document_id) is not None
    finally:
        again.close()


def test_delete_document_removes_it_and_tombstones_its_chunks(catalog: Catalog) -> None:
    keep_id = store(catalog, "/docs/keep.md", ["Coffee grows in Africa."])
    gone_id = store(catalog, "/docs/gone.md", OLD_TEXTS)
    gone_chunks = chunk_ids(catalog, gone_id)

    assert catalog.delete_document(gone_id) is True

    assert catalog.document(gone_id) is None
    assert catalog.document_by_path("/docs/gone.md") is None
    assert [d.id for d in catalog.list_documents()] == [keep_id]
    assert catalog.chunks(gone_chunks) == {}
    assert found(catalog, "lighthouses") == set()
    assert sorted(catalog.tombstones()) == sorted(gone_chunks)
    assert catalog.count_chunks() == 1
    with pytest.raises(StoreError, match=f"no document with id {gone_id}"):
        catalog.document_text(gone_id)
    assert catalog.delete_document(gone_id) is False


def test_clear_tombstones_removes_only_the_given_ids(catalog: Catalog) -> None:
    document_id = store(catalog, "/docs/a.md", OLD_TEXTS)
    first, second = chunk_ids(catalog, document_id)
    catalog.delete_document(document_id)

    catalog.clear_tombstones([first])

    assert catalog.tombstones() == [second]


# --- chunks --------------------------------------------------------------------------------


def test_chunks_returns_records_with_heading_path_tuples(catalog: Catalog) -> None:
    document_id = store(
        catalog, "/docs/a.md", OLD_TEXTS, title="Lights", headings=("Optics", "Lenses"), url="https://x.org"
    )
    ids = chunk_ids(catalog, document_id)

    records = catalog.chunks(ids)

    assert set(records) == set(ids)
    record = records[ids[1]]
    assert isinstance(record, ChunkRecord)
    assert record.heading_path == ("Optics", "Lenses")
    assert isinstance(record.heading_path, tuple)
    assert (record.document_id, record.ordinal, record.text, record.page) == (
        document_id,
        1,
        OLD_TEXTS[1],
        2,
    )
    assert catalog.document_text(document_id)[record.start : record.end] == record.text
    assert (record.path, record.title, record.url, record.token_count) == (
        "/docs/a.md",
        "Lights",
        "https://x.org",
        7,
    )
    assert record.embedding_text() == f"Lights > Optics > Lenses\n{OLD_TEXTS[1]}"


def test_chunks_of_no_ids_or_unknown_ids(catalog: Catalog) -> None:
    document_id = store(catalog, "/docs/a.md", OLD_TEXTS)
    ids = chunk_ids(catalog, document_id)

    assert catalog.chunks([]) == {}
    assert set(catalog.chunks([ids[0], 9999])) == {ids[0]}


def test_pending_chunks_mark_embedded_and_count_pending(catalog: Catalog) -> None:
    first_doc = store(catalog, "/docs/a.md", OLD_TEXTS)
    second_doc = store(catalog, "/docs/b.md", NEW_TEXTS)
    all_ids = chunk_ids(catalog, first_doc) + chunk_ids(catalog, second_doc)

    assert catalog.count_pending() == 5
    assert [c.id for c in catalog.pending_chunks()] == sorted(all_ids)
    assert [c.id for c in catalog.pending_chunks(limit=2)] == sorted(all_ids)[:2]

    catalog.mark_embedded(sorted(all_ids)[:3])

    assert catalog.count_pending() == 2
    assert [c.id for c in catalog.pending_chunks()] == sorted(all_ids)[3:]
    assert all(isinstance(c.heading_path, tuple) for c in catalog.pending_chunks())

    catalog.mark_embedded(all_ids)

    assert catalog.count_pending() == 0
    assert catalog.pending_chunks() == []
    assert catalog.count_chunks() == 5


def test_replaced_chunks_are_pending_again(catalog: Catalog) -> None:
    document_id = store(catalog, "/docs/a.md", OLD_TEXTS)
    catalog.mark_embedded(chunk_ids(catalog, document_id))
    assert catalog.count_pending() == 0

    store(catalog, "/docs/a.md", NEW_TEXTS, content_hash="h2")

    assert catalog.count_pending() == 3
    assert [c.text for c in catalog.pending_chunks()] == NEW_TEXTS


# --- what readers follow --------------------------------------------------------------------


def test_every_replacement_and_deletion_moves_the_generation_on(catalog: Catalog) -> None:
    start = catalog.generation()
    document_id = store(catalog, "/docs/a.md", OLD_TEXTS)
    after_store = catalog.generation()
    catalog.delete_document(document_id)

    assert start < after_store < catalog.generation()


def test_changes_since_a_generation_name_the_chunks_added_and_removed(catalog: Catalog) -> None:
    first = store(catalog, "/docs/a.md", OLD_TEXTS)
    old_chunks = chunk_ids(catalog, first)
    seen = catalog.generation()
    second = store(catalog, "/docs/a.md", NEW_TEXTS, content_hash="h2")
    other = store(catalog, "/docs/b.md", ["Coffee grows in Africa."])
    short_lived = chunk_ids(catalog, other)
    catalog.delete_document(other)

    changes = catalog.changes_since(seen)

    if isinstance(catalog, SqliteCatalog):
        assert changes is None  # the embedded catalog keeps no log: readers compare every id
        return
    assert changes is not None
    assert sorted(changes.added) == chunk_ids(catalog, second)
    assert sorted(changes.removed) == sorted(old_chunks + short_lived)
    assert catalog.changes_since(catalog.generation()) == ChunkChanges((), ())


def test_filtered_chunk_ids_apply_path_globs_formats_and_dates(catalog: Catalog) -> None:
    papers = store(catalog, "/data/papers/a [draft].md", OLD_TEXTS)
    notes = store(catalog, "/data/notes/b.md", NEW_TEXTS)

    def chunks_for(**fields: Any) -> set[int]:
        return catalog.filtered_chunk_ids(SearchFilter(**fields))

    assert chunks_for(include_paths=("/data/papers/*",)) == set(chunk_ids(catalog, papers))
    assert chunks_for(include_paths=("/data/papers/a [[]draft].md",)) == set(chunk_ids(catalog, papers))
    assert chunks_for(exclude_paths=("*/papers/*",)) == set(chunk_ids(catalog, notes))
    assert chunks_for(include_paths=("/data/?otes/*.md",)) == set(chunk_ids(catalog, notes))
    assert chunks_for(include_paths=("/DATA/*",)) == set()  # globs are case-sensitive
    assert chunks_for(formats=("pdf",)) == set()
    assert chunks_for(modified_after=1700000000.0) == set(catalog.chunk_id_list())
    assert chunks_for(modified_before=1700000000.0) == set()
    assert catalog.document_ids(SearchFilter(include_paths=("*/notes/*",))) == [notes]


def test_a_deleted_chunk_is_absent_from_every_read(catalog: Catalog) -> None:
    document_id = store(catalog, "/docs/a.md", OLD_TEXTS)
    ids = chunk_ids(catalog, document_id)

    catalog.delete_documents([document_id])

    assert catalog.chunks(ids) == {}
    assert catalog.chunk_languages(ids) == {}
    assert catalog.keyword_rows(ids) == []
    assert catalog.chunk_ids() == {}
    assert catalog.pending_chunks() == []
