"""`footnote bench ingest`: the sample folder ingested against a plain encode, with the real models."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from footnote.cli.main import app as cli
from tests.conftest import REPO


def test_bench_ingest_reports_both_halves_and_saves_what_it_prints(tmp_path: Path) -> None:
    out = tmp_path / "results"
    sample = REPO / "examples" / "sample"
    result = CliRunner().invoke(cli, ["bench", "ingest", str(sample), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    (saved,) = out.glob("ingest-*.json")
    assert json.loads(saved.read_text(encoding="utf-8")) == printed
    assert printed["documents"] == printed["summary"]["new"] == 4
    # footnote embeds every token in chunks that fit the window; the plain encode truncates.
    assert printed["footnote_chunks_over_window"] == 0
    whole = printed["plain_encode_tokens"] + printed["tokens_dropped_by_plain_encode"]
    assert printed["footnote_tokens_embedded"] >= whole - 2 * printed["documents"]
    assert 0 <= printed["footnote_padding_share"] < 0.5
    expected = printed["footnote_ingest_seconds"] / printed["plain_encode_seconds"]
    assert abs(printed["ratio"] - expected) < 1e-3
    assert printed["machine"]["cpus"] >= 1
    chart = out / printed["chart"]
    assert chart.suffix in (".png", ".svg") and chart.stat().st_size > 1000
    assert printed["footnote_embedder"]["precision"] in ("fp32", "int8", "bf16")


def test_bench_ingest_prints_a_table(tmp_path: Path) -> None:
    sample = REPO / "examples" / "sample" / "honeybees.txt"
    result = CliRunner().invoke(cli, ["bench", "ingest", str(sample), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "plain encode" in result.output and "footnote ingest" in result.output
    assert "ratio" in result.output


def test_bench_ingest_against_other_files_sets_the_rates_side_by_side(tmp_path: Path) -> None:
    chinese = tmp_path / "chinese"
    chinese.mkdir()
    (chinese / "蜜蜂.txt").write_text(
        "蜜蜂是会飞的昆虫，以花粉和花蜜为食。工蜂用摇摆舞告诉同伴花在哪里。", encoding="utf-8"
    )
    lighthouses = "灯塔在夜里为船只指明方向。菲涅耳透镜把灯光聚成一束。"
    (chinese / "灯塔.txt").write_text(lighthouses, encoding="utf-8")
    english = REPO / "examples" / "sample" / "honeybees.txt"
    result = CliRunner().invoke(
        cli, ["bench", "ingest", str(chinese), "--against", str(english), "--out", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["summary"]["new"] == 2 and printed["against"]["summary"]["new"] == 1
    assert printed["footnote_language_index_chunks"] == printed["footnote_chunks"] >= 2
    assert printed["against"]["footnote_language_index_chunks"] == 0
    expected = printed["footnote_documents_per_second"] / printed["against"]["footnote_documents_per_second"]
    assert abs(printed["documents_per_second_vs_against"] - expected) < 0.01 * expected
    assert printed["against"]["paths"] == [str(english)]
