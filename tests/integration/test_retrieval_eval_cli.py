"""`footnote eval retrieval` end to end: a separate process, the real MiniLM, a tiny BEIR folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_cli import as_json, footnote
from tests.unit.test_evaluation_retrieval import write_beir

pytestmark = pytest.mark.integration


def test_prints_every_mode_as_json_and_leaves_home_untouched(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "tiny")
    home = tmp_path / "home"

    report = as_json(footnote(home, "eval", "retrieval", str(dataset), "--json"))

    assert report["dataset"] == "tiny" and report["queries"] == 3
    assert report["ingest"]["new"] == 5 and report["ingest"]["failed"] == 0
    assert [row["mode"] for row in report["results"]] == ["keyword", "dense", "hybrid"]
    for row in report["results"]:
        assert 0.0 < row["ndcg_at_10"] <= 1.0
        assert row["recall_at_100"] == pytest.approx(1.0)
        assert row["queries_per_second"] > 0
    assert not (home / "catalog.sqlite3").exists()  # the index was isolated and temporary


def test_prints_a_table_and_reuses_a_kept_index(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "tiny")
    index = tmp_path / "kept-index"

    first = footnote(tmp_path / "home", "eval", "retrieval", str(dataset), "--index-dir", str(index))
    again = footnote(
        tmp_path / "home",
        "eval",
        "retrieval",
        str(dataset),
        "--index-dir",
        str(index),
        "--mode",
        "hybrid",
        "--limit-queries",
        "2",
        "--json",
    )

    assert first.returncode == 0, first.stderr
    for heading in (
        "nDCG@10",
        "MRR@10",
        "Recall@10",
        "Recall@100",
        "queries/s",
        "keyword",
        "dense",
        "hybrid",
    ):
        assert heading in first.stdout
    report = json.loads(again.stdout)
    assert report["ingest"]["unchanged"] == 5 and report["ingest"]["chunks_embedded"] == 0
    assert [row["mode"] for row in report["results"]] == ["hybrid"] and report["queries"] == 2


def test_a_folder_that_is_not_beir_is_one_clear_error(tmp_path: Path) -> None:
    result = footnote(tmp_path / "home", "eval", "retrieval", str(tmp_path))

    assert result.returncode == 2
    assert "corpus.jsonl is missing" in result.stderr


def test_a_configured_reranker_adds_a_rerank_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = write_beir(tmp_path / "tiny")
    monkeypatch.setenv("FOOTNOTE_RERANK", "llm")
    monkeypatch.setenv("FOOTNOTE_RERANK_CANDIDATES", "3")

    report = as_json(footnote(tmp_path / "home", "eval", "retrieval", str(dataset), "--json"))

    assert [row["mode"] for row in report["results"]] == ["keyword", "dense", "hybrid", "rerank"]
    assert report["settings"]["rerank"] == "llm" and report["settings"]["rerank_candidates"] == 3
    rerank = report["results"][-1]
    assert rerank["queries"] == 3 and 0.0 <= rerank["ndcg_at_10"] <= 1.0


def test_the_rerank_mode_without_a_reranker_is_one_clear_error(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "tiny")

    result = footnote(tmp_path / "home", "eval", "retrieval", str(dataset), "--mode", "rerank")

    assert result.returncode == 2
    assert "set FOOTNOTE_RERANK" in " ".join(result.stderr.split())
