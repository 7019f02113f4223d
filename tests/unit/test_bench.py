"""`footnote bench load`: questions and variants, percentiles, saturation, and a run against a server."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from footnote.bench.load import Outcome, StepResult, _first_seen, percentiles, saturation, summarise
from footnote.bench.queries import drop, load_queries, mask, robustness_set, swap, typo
from footnote.cli.main import app as cli
from footnote.errors import ConfigError
from tests.integration.backend_servers import free_port
from tests.unit.server_fixtures import APPLE_REPLY, build

CLAIM = "Vitamin D3 supplements reduce fracture risk in Finnish adults over 65."


def test_variants_change_one_thing_each() -> None:
    rng = random.Random(1)
    words = CLAIM.split()
    typed = typo(CLAIM, rng).split()
    assert len(typed) == len(words) and sum(a != b for a, b in zip(typed, words, strict=True)) == 1
    assert sorted(swap(CLAIM, rng).split()) == sorted(words) and swap(CLAIM, rng) != CLAIM
    assert len(drop(CLAIM, rng).split()) == len(words) - 1
    masked = mask(CLAIM, rng)
    assert "something" in masked and masked.split()[0] == "Vitamin"
    queries = robustness_set([CLAIM, "short one"], seed=3)
    assert {q.kind for q in queries} == {"original", "typo", "swap", "drop", "mask"}
    assert robustness_set([CLAIM], seed=3) == robustness_set([CLAIM], seed=3)


def test_query_files_and_their_errors(tmp_path: Path) -> None:
    jsonl = tmp_path / "queries.jsonl"
    jsonl.write_text('{"_id": "1", "text": "first"}\n\n{"_id": "2", "text": "second"}\n', encoding="utf-8")
    assert load_queries(jsonl) == ["first", "second"]
    assert load_queries(jsonl, limit=1) == ["first"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": 1}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken.jsonl:1: expected a JSON object with a 'text' field"):
        load_queries(broken)
    with pytest.raises(ConfigError, match="no query file"):
        load_queries(tmp_path / "missing.txt")


def test_percentiles_by_nearest_rank() -> None:
    assert percentiles([float(v) for v in range(1, 101)]) == {"p50": 50.0, "p95": 95.0, "p99": 99.0}
    assert percentiles([3.0]) == {"p50": 3.0, "p95": 3.0, "p99": 3.0}
    assert percentiles([]) == {"p50": None, "p95": None, "p99": None}


def step(rate: float, latency: float = 2.0, rejected: int = 0, failed: int = 0) -> StepResult:
    outcomes = [Outcome("ok", "original", 0.5, 1.0, latency)] * 10
    outcomes += [Outcome("rejected", "original")] * rejected + [Outcome("timeout", "original")] * failed
    return summarise(outcomes, rate, 10, 10, None)


def test_saturation_is_the_first_rate_not_kept_up_with() -> None:
    summary = saturation([step(0.5), step(1, latency=5.0), step(2, latency=7.0), step(4, latency=30.0)])
    assert summary["saturation_qps"] == 2 and summary["highest_sustained_qps"] == 1  # median over 3x
    assert summary["p99_latency_below_s"] == 5.0 and summary["low_load_p99_latency_s"] == 2.0
    assert summary["p99_first_token_below_s"] == 0.5 and summary["p99_first_sentence_below_s"] == 1.0
    assert saturation([step(0.5), step(1, rejected=2)])["saturation_qps"] == 1
    assert saturation([step(0.5), step(1, failed=2)])["saturation_qps"] == 1
    assert saturation([step(0.5)])["saturation_qps"] is None


def test_a_missing_first_token_or_sentence_is_counted_never_replaced_by_latency() -> None:
    outcomes = [
        Outcome("ok", "original", 0.5, 1.0, 2.0),
        Outcome("ok", "original", 0.7, None, 3.0),  # streamed text, but not the checked sentence
        Outcome("ok", "original", None, None, 4.0),  # streamed nothing
    ]
    result = summarise(outcomes, 1, 10, 10, None)
    assert result.ok == 3 and (result.missing_first_token, result.missing_first_sentence) == (1, 2)
    assert result.first_token_s == {"p50": 0.5, "p95": 0.7, "p99": 0.7}
    assert result.first_sentence_s == {"p50": 1.0, "p95": 1.0, "p99": 1.0}
    assert result.latency_s["p99"] == 4.0


def test_each_request_class_is_reported_apart_with_the_refusals_retry_after() -> None:
    outcomes = [
        Outcome("ok", "original", 0.3, 0.5, 1.0, request_class="interactive"),
        Outcome("ok", "typo", 0.4, 0.6, 2.0, request_class="interactive"),
        Outcome("rejected", "original", latency=0.01, request_class="interactive", retry_after=3.0),
        Outcome("ok", "original", 0.5, 0.7, 9.0, request_class="batch"),
        Outcome("rejected", "original", latency=0.02, request_class="batch"),  # no Retry-After
    ]
    result = summarise(outcomes, 1, 10, 10, 123)
    assert (result.sent, result.ok, result.rejected, result.rss_bytes) == (5, 3, 2, 123)
    assert result.retry_after_s["p50"] == 3.0 and result.missing_retry_after == 1
    assert result.rejected_in_s["p99"] == 0.02
    interactive, batch = result.by_class["interactive"], result.by_class["batch"]
    assert (interactive["sent"], interactive["ok"], interactive["rejected"]) == (3, 2, 1)
    assert interactive["latency_s"]["p99"] == 2.0 and interactive["retry_after_s"]["p50"] == 3.0
    assert (batch["sent"], batch["ok"], batch["rejected"], batch["latency_s"]["p50"]) == (2, 1, 1, 9.0)
    assert summarise(outcomes[:1], 1, 10, 10, None).by_class.keys() == {"interactive"}
    assert summarise([Outcome("ok", "original", 0.1, 0.2, 0.3)], 1, 10, 10, None).by_class == {}


def test_the_first_checked_sentence_is_seen_when_it_has_streamed_whole() -> None:
    streamed = [
        (0.1, "Apple trees"),
        (0.2, "Apple trees need  bees [1]."),
        (0.3, "Apple trees need bees [1]. More"),
    ]
    assert _first_seen(streamed, "Apple trees need bees.") == 0.2
    assert _first_seen(streamed, "Pears need wasps.") is None
    assert _first_seen(streamed, "") is None


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[str]:
    server, _ = build(tmp_path, [APPLE_REPLY] * 200, max_concurrency=1, max_queue=0)
    port = free_port()
    runner = uvicorn.Server(uvicorn.Config(server, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    while not runner.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    runner.should_exit = True
    thread.join(30)


def test_bench_load_writes_a_report_and_a_chart(live_server: str, tmp_path: Path) -> None:
    queries = tmp_path / "questions.txt"
    queries.write_text("What do apple trees need?\nWhy do bees carry pollen between Apple varieties?\n")
    out = tmp_path / "results"
    args = ["bench", "load", "--url", live_server, "--queries", str(queries), "--rates", "4,8"]
    args += ["--step-seconds", "1", "--out", str(out), "--label", "smoke", "--pid", str(os.getpid())]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "smoke.json").read_text())
    assert [s["offered_qps"] for s in report["steps"]] == [4, 8]
    for data in report["steps"]:
        assert data["sent"] == data["ok"] + data["rejected"] + data["errors"] + data["timeouts"] > 0
        assert data["errors"] == data["timeouts"] == 0, data["sample_errors"]
        assert data["rss_bytes"] > 0
    first = report["steps"][0]
    assert first["ok"] > 0 and first["first_token_s"]["p50"] is not None
    assert first["first_sentence_s"]["p50"] is not None
    for data in report["steps"]:
        assert data["missing_first_token"] == data["missing_first_sentence"] == 0
    assert set(report["queries"]) <= {"original", "typo", "swap", "drop", "mask"}
    assert (out / "smoke.svg").exists() or (out / "smoke.png").exists()
    assert "offered 4/s" in result.output


def test_bench_load_json_prints_the_report(live_server: str, tmp_path: Path) -> None:
    queries = tmp_path / "questions.txt"
    queries.write_text("What do apple trees need?\n")
    out = tmp_path / "results"
    args = ["bench", "load", "--url", live_server, "--queries", str(queries), "--rates", "2", "--no-robust"]
    args += ["--step-seconds", "1", "--out", str(out), "--label", "smoke", "--json"]
    args += ["--mix", "interactive:3,batch"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == json.loads((out / "smoke.json").read_text())
    assert printed["mix"] == {"interactive": 3.0, "batch": 1.0}
    first = printed["steps"][0]
    assert first["ok"] > 0 and first["missing_first_sentence"] == 0
    # Without --pid the server's memory comes from its /metrics page.
    assert first["rss_bytes"] > 0 and first["rss_peak_bytes"] >= first["rss_bytes"]
    assert set(first["by_class"]) <= {"interactive", "batch"}
    assert sum(figures["sent"] for figures in first["by_class"].values()) == first["sent"]
    assert "cpu_flags" in printed["machine"]


@pytest.mark.parametrize(
    ("mix", "problem"),
    [("urgent:1", "'urgent' is not a request class"), ("batch:x", "must be a number"), ("api:0", "above 0")],
)
def test_bench_load_refuses_a_bad_mix(tmp_path: Path, mix: str, problem: str) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("anything\n")
    args = ["bench", "load", "--url", "http://127.0.0.1:9", "--queries", str(queries), "--mix", mix]
    result = CliRunner().invoke(cli, args)
    assert isinstance(result.exception, ConfigError) and problem in str(result.exception)


def test_bench_load_says_when_the_server_is_not_there(tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("anything\n")
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli, ["bench", "load", "--url", url, "--queries", str(queries)])
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError)
    assert "is `footnote serve` running there?" in str(result.exception)


def test_bench_serve_reports_quiet_busy_and_uploading(live_server: str, tmp_path: Path) -> None:
    queries = tmp_path / "questions.txt"
    questions = ["What do apple trees need?", "Why do bees carry pollen?", "How tall do apple trees grow?"]
    queries.write_text("\n".join(questions) + "\n")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    for number in range(3):
        note = f"Orchard note {number}: apple trees need sun and water.\n"
        (uploads / f"note-{number}.txt").write_text(note)
    out = tmp_path / "results"
    args = ["bench", "serve", "--url", live_server, "--queries", str(queries), "--busy", "1"]
    args += ["--upload", str(uploads), "--out", str(out), "--label", "smoke", "--json"]
    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    (saved,) = out.glob("smoke-*.json")
    assert printed == json.loads(saved.read_text())
    assert printed["quiet"]["answered"] == 3 and printed["quiet"]["failed"] == 0
    assert printed["busy"]["loops"] == 1 and printed["busy"]["answered"] == 3
    assert printed["busy"]["ratio_p50"] > 0 and printed["uploading"]["ratio_p90"] > 0
    assert printed["uploading"]["files"] == 3 and printed["uploading"]["upload_failures"] == 0
    assert "cpu_flags" in printed["machine"]


def test_bench_serve_refuses_an_upload_that_is_not_a_folder(tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("anything\n")
    args = ["bench", "serve", "--url", "http://127.0.0.1:9", "--queries", str(queries)]
    result = CliRunner().invoke(cli, [*args, "--upload", str(tmp_path / "missing")])
    assert isinstance(result.exception, ConfigError) and "not a folder" in str(result.exception)
