"""`footnote ingest` processes on one PostgreSQL catalog: two at once ingest each file once, and
one killed mid-ingest leaves nothing half-visible; run again, it ends as an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from footnote.store.postgres import PostgresCatalog
from tests.conftest import REPO
from tests.integration.test_ingest_crash import write_phase_a
from tests.postgres_server import PostgresServer


def child(home: Path, folder: Path, catalog_url: str, kill: str | None = None) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "FOOTNOTE_HOME": str(home),
        "FOOTNOTE_CATALOG_URL": catalog_url,
        "FOOTNOTE_CHUNK_TOKENS": "40",
        "FOOTNOTE_CHUNK_OVERLAP": "8",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    command = [sys.executable, "-m", "tests.crash_child", *([kill] if kill else []), "--"]
    command += ["ingest", str(folder), "--json"]
    return subprocess.Popen(
        command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finished(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def catalog_state(catalog_url: str, folder: Path) -> dict[str, Any]:
    """Documents and their chunks by path and ordinal (ids differ between runs)."""
    catalog = PostgresCatalog(catalog_url)
    try:
        records = catalog.chunks(catalog.chunk_id_list()).values()
        by_document: dict[int, list[tuple[int, str]]] = {}
        for record in records:
            by_document.setdefault(record.document_id, []).append((record.ordinal, record.text))
        return {
            Path(d.path).relative_to(folder).as_posix(): (d.content_hash, sorted(by_document.get(d.id, [])))
            for d in catalog.list_documents()
        }
    finally:
        catalog.close()


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {Path(f["path"]).name: f["status"] for f in report["files"]}


def test_two_processes_ingesting_one_folder_store_each_file_once(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    folder = tmp_path / "corpus"
    write_phase_a(folder)
    reference = postgres_server.create_database("ingest_reference")
    finished(child(tmp_path / "reference", folder, reference))
    shared = postgres_server.create_database("ingest_shared")

    first, second = (child(tmp_path / name, folder, shared) for name in ("a", "b"))
    reports = [finished(first), finished(second)]

    assert catalog_state(shared, folder) == catalog_state(reference, folder)
    names = sorted(p.name for p in folder.iterdir())
    ingested = sorted(name for r in reports for name, status in statuses(r).items() if status == "new")
    assert ingested == names  # every file stored by exactly one of the two
    for report in reports:
        assert set(statuses(report).values()) <= {"new", "unchanged", "skipped"}


def test_a_killed_ingest_leaves_whole_documents_and_a_rerun_finishes_the_work(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    folder = tmp_path / "corpus"
    write_phase_a(folder)
    reference = postgres_server.create_database("killed_reference")
    finished(child(tmp_path / "reference", folder, reference))
    expected = catalog_state(reference, folder)
    shared = postgres_server.create_database("killed_shared")

    # Killed while writing the second window's vectors: inside its catalog transaction.
    killed = child(tmp_path / "replica", folder, shared, kill="upsert:2:after")
    killed.communicate(timeout=300)
    assert killed.returncode == -9

    halfway = catalog_state(shared, folder)
    assert 0 < len(halfway) < len(expected)
    assert all(halfway[path] == expected[path] for path in halfway)  # whole documents only
    finished(child(tmp_path / "replica", folder, shared))
    assert catalog_state(shared, folder) == expected
