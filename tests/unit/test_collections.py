"""Collections in the application and both catalogs: ingest into one, move, list, delete; and
scoped keys kept only by their hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.application.keys import create_key, key_hash, revoke_key
from footnote.config import Settings
from footnote.core.collections import Access, parse_collections
from footnote.core.filters import SearchFilter
from footnote.errors import NotFoundError, QueryError, StoreError
from tests.fakes import HashingEmbedder, ScriptedGenerator


def _app(tmp_path: Path) -> Application:
    settings = Settings(home=tmp_path / "home", reader="sources")
    return create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))


def _folder(path: Path, name: str, text: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text, encoding="utf-8")
    return path


def test_documents_join_a_collection_keep_it_and_move_only_when_told(tmp_path: Path) -> None:
    app = _app(tmp_path)
    folder = _folder(tmp_path / "docs", "ice.txt", "A glacier is dense ice that moves under its weight.\n")
    app.ingest([folder], collection="science")
    again = app.ingest([folder])  # no collection named: it stays where it is, unchanged
    assert [f.status for f in again.files] == ["unchanged"]
    assert [d.collection for d in app.documents()] == ["science"]
    moved = app.ingest([folder], collection="archive")
    assert [f.status for f in moved.files] == ["changed"]
    assert [(c.name, c.documents) for c in app.collections()] == [("archive", 1)]
    new = _folder(tmp_path / "more", "apples.txt", "Apple trees need a cold winter.\n")
    app.ingest([new])
    assert {d.collection for d in app.documents()} == {"archive", "default"}


def test_search_inside_a_collection_fills_its_list_from_that_collection_only(tmp_path: Path) -> None:
    app = _app(tmp_path)
    for index in range(6):
        _folder(tmp_path / "big", f"ice{index}.txt", f"Glacier ice report {index}: dense ice moves.\n")
    app.ingest([tmp_path / "big"], collection="big")
    app.ingest([_folder(tmp_path / "small", "note.txt", "One glacier note about ice.\n")], collection="small")
    for mode in ("keyword", "dense", "hybrid"):
        hits = app.search("glacier ice", limit=3, mode=mode, filters=SearchFilter(collections=("small",)))
        assert [Path(hit.path).name for hit in hits] == ["note.txt"], mode
    assert app.search("glacier ice", limit=3, filters=SearchFilter(collections=())) == []


def test_removing_a_collection_removes_its_documents_and_vectors(tmp_path: Path) -> None:
    app = _app(tmp_path)
    app.ingest([_folder(tmp_path / "a", "ice.txt", "Glacier ice moves.\n")], collection="gone")
    app.ingest([_folder(tmp_path / "b", "apple.txt", "Apple trees need winter.\n")])
    vectors_before = app.vectors.count()
    removed = app.delete_collection("gone")
    assert [Path(r.path).name for r in removed] == ["ice.txt"]
    assert [c.name for c in app.collections()] == ["default"]
    assert app.vectors.count() == vectors_before - removed[0].chunk_count
    with pytest.raises(NotFoundError, match="no collection 'gone'"):
        app.delete_collection("gone")


def test_a_key_is_stored_only_as_its_hash_and_opens_what_it_was_given(tmp_path: Path) -> None:
    app = _app(tmp_path)
    key = create_key(app.catalog, "editor", ["handbook"], ["contracts"])
    (record,) = app.catalog.keys()
    assert key.startswith("fn_") and record.key_hash == key_hash(key) and key not in repr(record)
    access = app.key_access(key)
    assert access == Access.scoped("editor", ["handbook", "contracts"], ["contracts"])
    assert access is not None and access.can_read("contracts") and not access.can_write("handbook")
    assert app.key_access(key[:-1] + "x") is None and app.key_access("not-a-key") is None
    with pytest.raises(StoreError, match="a key named 'editor' exists"):
        create_key(app.catalog, "editor", ["x"])
    with pytest.raises(QueryError, match="would open nothing"):
        create_key(app.catalog, "nobody", [])
    revoke_key(app.catalog, "editor")
    assert app.key_access(key) is None
    with pytest.raises(NotFoundError, match="no key named 'editor'"):
        revoke_key(app.catalog, "editor")


def test_a_caller_reads_only_its_collections_and_names_none_it_cannot() -> None:
    access = Access.scoped("k", ["a", "b"], [])
    assert access.readable(None) == ("a", "b") and access.readable(["b"]) == ("b",)
    with pytest.raises(NotFoundError, match="no collection 'c'"):
        access.readable(["a", "c"])
    assert Access().readable(None) is None
    assert parse_collections(" a, b ,a,") == ("a", "b")
    assert parse_collections("合同,v1.2_final") == ("合同", "v1.2_final")
    with pytest.raises(QueryError, match="1 to 64 letters"):
        parse_collections("ok,not ok")


def test_an_answer_engine_for_some_collections_searches_only_them(tmp_path: Path) -> None:
    app = _app(tmp_path)
    app.ingest([_folder(tmp_path / "a", "ice.txt", "Glacier ice moves under its weight.\n")], collection="a")
    app.ingest([_folder(tmp_path / "b", "ice2.txt", "Glacier ice is dense and blue.\n")], collection="b")
    engine = app.answer_engine(collections=("b",))
    hits = engine.retriever.search("glacier ice", engine.policy.retrieval)
    assert [Path(hit.path).name for hit in hits] == ["ice2.txt"]
