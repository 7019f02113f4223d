"""`footnote bench ppl`: footnote's scorer against a plain llama-cpp-python loop and transformers,
on a short stretch of text, with the bundled SmolLM2 GGUF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from footnote.bench.ppl import CONTENDERS
from footnote.cli.main import app as cli
from footnote.config import Settings
from footnote.errors import ConfigError
from footnote.perplexity import ScoringOptions, open_scorer, score_file
from tests.conftest import REPO

TEXT = REPO / "examples" / "sample" / "honeybees.txt"


def bench_ppl(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["bench", "ppl", str(TEXT), "--threads", "2", "--json", *args])
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(result.stdout)
    return report


def rows_by_key(report: dict[str, object]) -> dict[str, dict[str, float]]:
    rows = report["rows"]
    assert isinstance(rows, list)
    return {row["key"]: row for row in rows}


@pytest.fixture
def kept_models(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model folder kept between test runs: the @f32 and @q8_0 copies take seconds to make, and
    dequantizing the GGUF in transformers about a minute."""
    folder = Path(request.config.cache.mkdir("footnote-bench-ppl-models"))
    monkeypatch.setenv("FOOTNOTE_MODEL_DIR", str(folder))
    return folder


def test_bench_ppl_without_transformers_scores_the_same_windows_and_saves_what_it_prints(
    kept_models: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results" / "ppl.json"
    skips = ("--skip", "transformers", "--skip", "footnote-torch-bf16")
    args = ("--max-tokens", "256", "--context", "64", *skips, "--out", str(out))
    report = bench_ppl(*args)
    assert json.loads(out.read_text(encoding="utf-8")) == report
    assert list(out.parent.glob("ppl.png")) or list(out.parent.glob("ppl.svg"))
    rows = rows_by_key(report)
    assert set(rows) == {"footnote", "footnote-f32", "footnote-q8_0", "llama-cpp-python"}
    protocol = report["protocol"]
    assert isinstance(protocol, dict)
    assert protocol["tokens"] == 256 and protocol["windows"] == 4
    assert report["footnote_windows_per_decode"] == 8  # short windows share a decode
    assert {row["tokens_scored"] for row in rows.values()} == {256 - 4}
    # The same quantized model, scored two ways; its exact float32 copy is close to it.
    assert rows["footnote"]["perplexity"] == pytest.approx(rows["llama-cpp-python"]["perplexity"], rel=0.01)
    for copy in ("footnote-f32", "footnote-q8_0"):
        assert rows[copy]["perplexity"] == pytest.approx(rows["footnote"]["perplexity"], rel=0.05)
    assert report["reference"] is None and report["same_tokens"] is None
    assert rows["footnote"]["speedup_vs_transformers"] is None
    machine = report["machine"]
    assert isinstance(machine, dict) and machine["cpus"] >= 1 and "cpu_flags" in machine

    # `footnote ppl`'s own scoring gives the footnote row's perplexity.
    options = ScoringOptions(context_length=64, max_tokens=256)
    with open_scorer("smollm2-135m", Settings(threads=2), context_length=64) as scorer:
        alone = score_file(scorer, TEXT, options)
    assert alone.perplexity == pytest.approx(rows["footnote"]["perplexity"], rel=1e-9)


def test_bench_ppl_against_transformers(kept_models: Path, tmp_path: Path) -> None:
    pytest.importorskip("gguf", reason="the transformers contender needs the dev extra (gguf, accelerate)")
    args = ("--max-tokens", "256", "--context", "128", "--stride", "96", "--skip", "llama-cpp-python")
    report = bench_ppl(*args, "--out", str(tmp_path / "ppl.json"))
    rows = rows_by_key(report)
    assert report["reference"] == "transformers" and report["same_tokens"] is True
    assert len({row["tokens_scored"] for row in rows.values()}) == 1
    # The exact float32 dequantization computes what transformers computes.
    assert rows["footnote-f32"]["perplexity"] == pytest.approx(rows["transformers"]["perplexity"], rel=1e-4)
    assert abs(rows["footnote"]["perplexity_vs_transformers_percent"]) < 1
    assert abs(rows["footnote-q8_0"]["perplexity_vs_transformers_percent"]) < 1
    # bf16 products, float32 logits: close to the float reference, but not it.
    assert 0 < abs(rows["footnote-torch-bf16"]["perplexity_vs_transformers_percent"]) < 1
    assert rows["transformers"]["speedup_vs_transformers"] == 1


def test_bench_ppl_prints_a_table(tmp_path: Path) -> None:
    args = ["bench", "ppl", str(TEXT), "--max-tokens", "64", "--context", "32", "--threads", "2"]
    skips = [arg for key in CONTENDERS if key != "footnote" for arg in ("--skip", key)]
    result = CliRunner().invoke(cli, [*args, *skips, "--out", str(tmp_path / "ppl.json")])
    assert result.exit_code == 0, result.output
    assert "footnote" in result.output and "smollm2-135m" in result.output and "PPL" in result.output
    assert "wrote" in result.output and str(tmp_path / "ppl.json") in result.output.replace("\n", "")


def test_bench_ppl_names_the_fix_for_bad_choices(tmp_path: Path) -> None:
    every = [arg for key in CONTENDERS for arg in ("--skip", key)]
    base = ["bench", "ppl", str(TEXT), "--max-tokens", "64", "--out", str(tmp_path / "ppl.json")]
    result = CliRunner().invoke(cli, [*base, *every])
    assert isinstance(result.exception, ConfigError) and "keep one of footnote" in str(result.exception)
    result = CliRunner().invoke(cli, [*base, "--skip", "torch"])
    assert isinstance(result.exception, ConfigError) and "--skip torch: unknown" in str(result.exception)
