"""Perplexity with the bundled SmolLM2 GGUF: llama.cpp against the transformers reference, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.models.registry import resolve_llm, sha256_file
from footnote.perplexity import ScoringOptionError, ScoringOptions, TokenScore, score_string
from footnote.perplexity.backends.llamacpp import LlamaCppScorer

TEXT = (
    "The lighthouse stood on a rocky headland at the mouth of the harbour. Its lamp was first lit in 1823, "
    "and for more than a century keepers climbed the spiral stairs every evening to trim the wicks and wind "
    "the clockwork that turned the lens. In 1932 the light was electrified; the last keeper left in 1961. "
    "Today the tower is a museum. Visitors can climb to the lantern room, where the original Fresnel lens, "
    "made of hundreds of glass prisms, still turns slowly above the sea.\n"
    "The harbour itself grew up around the fishing trade. Herring boats crowded the quays each autumn, "
    "and the smokehouses along the waterfront worked day and night while the shoals were running."
)
OPTIONS = ScoringOptions(context_length=96, stride=48)


@pytest.fixture(scope="module")
def llama_scorer() -> Iterator[LlamaCppScorer]:
    with LlamaCppScorer(resolve_llm("smollm2-135m"), context_length=128, threads=2) as scorer:
        yield scorer


def test_llama_cpp_agrees_with_transformers_on_the_same_gguf(
    llama_scorer: LlamaCppScorer, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("gguf", reason="the transformers reference needs the dev extra (gguf, accelerate)")
    from footnote.perplexity.backends.transformers import TransformersScorer

    # Dequantizing the GGUF in transformers takes about a minute; the checkpoint is kept between runs.
    cache = Path(request.config.cache.mkdir("footnote-transformers-reference"))
    reference = TransformersScorer(resolve_llm("smollm2-135m"), cache_dir=cache, threads=2)
    assert reference.tokenizer.tokenize(TEXT) == llama_scorer.tokenizer.tokenize(TEXT)

    ours = score_string(llama_scorer, TEXT, OPTIONS)
    theirs = score_string(reference, TEXT, OPTIONS)
    assert ours.tokens_scored == theirs.tokens_scored == ours.tokens_read - 1 > 100
    assert ours.windows > 2  # overlapping windows were used
    assert ours.perplexity == pytest.approx(theirs.perplexity, rel=0.01)


def test_batched_continuation_scores_equal_one_window_each(request: pytest.FixtureRequest) -> None:
    pytest.importorskip("gguf", reason="the transformers scorer needs the dev extra (gguf, accelerate)")
    from footnote.perplexity.backends.transformers import TransformersScorer

    cache = Path(request.config.cache.mkdir("footnote-transformers-reference"))
    scorer = TransformersScorer(resolve_llm("smollm2-135m"), cache_dir=cache, threads=2)
    tokenize = scorer.tokenizer.tokenize
    contexts = [tokenize(text) for text in ("The shoals were running.", TEXT[:200], "Passage:")]
    question = tokenize(" Where did the smokehouses work?")
    batched = scorer.score_continuation(contexts, question, batch=2)  # a full batch and a short one
    for context, row in zip(contexts, batched, strict=True):
        alone = scorer.score_window([*context, *question], len(context))
        assert row == pytest.approx(alone, abs=1e-3)
    assert batched[0] != pytest.approx(batched[1], abs=1e-3)  # the context changes the scores


def test_per_token_detail_rebuilds_the_text(llama_scorer: LlamaCppScorer) -> None:
    seen: list[TokenScore] = []
    result = score_string(llama_scorer, TEXT, OPTIONS, on_token=seen.append)
    assert len(seen) == result.tokens_scored
    first_text = TEXT[: seen[0].offset]
    assert first_text + "".join(s.text for s in seen) == TEXT
    assert all(s.logprob <= 0 for s in seen)


def test_context_length_above_the_models_training_context(llama_scorer: LlamaCppScorer) -> None:
    with pytest.raises(ScoringOptionError, match="above the 128 tokens"):
        score_string(llama_scorer, TEXT, ScoringOptions(context_length=256))
    with pytest.raises(ScoringOptionError, match="training context of 8192 tokens"):
        LlamaCppScorer(resolve_llm("smollm2-135m"), context_length=8193)


def footnote_cli(*args: str, home: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "FOOTNOTE_HOME": str(home), "FOOTNOTE_THREADS": "2", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "footnote", "ppl", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_cli_scores_a_file_as_json_and_writes_token_detail(tmp_path: Path) -> None:
    text_file = tmp_path / "harbour.txt"
    text_file.write_text(TEXT, encoding="utf-8")
    tokens_file = tmp_path / "tokens.jsonl"
    done = footnote_cli(
        str(text_file), "-c", "96", "--stride", "48", "--tokens", str(tokens_file), "--json", home=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stdout)
    (result,) = report["results"]
    assert result["model"].startswith("smollm2-135m@q8_0")  # the answer model, as answers run it
    assert result["protocol"] == {
        "name": "hf",
        "context_length": 96,
        "stride": 48,
        "bos": False,
        "max_tokens": None,
    }
    assert result["perplexity"] > 1 and result["perplexity_stderr"] > 0
    lines = [json.loads(line) for line in tokens_file.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == result["tokens_scored"]
    assert set(lines[0]) == {"model", "index", "token_id", "text", "offset", "logprob"}


def test_cli_reads_stdin_and_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    done = footnote_cli("-", "--max-tokens", "40", "-c", "32", "--json", home=tmp_path, stdin=TEXT.encode())
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["results"][0]["tokens_read"] == 40
    bad = footnote_cli("-", home=tmp_path, stdin=b"caf\xe9 au lait")
    assert bad.returncode == 2
    assert "standard input is not valid UTF-8: bytes e9 at byte offset 3" in bad.stderr.decode()


def test_cli_compares_a_model_with_its_q8_0_requantization(tmp_path: Path, shared_model_dir: Path) -> None:
    text_file = tmp_path / "harbour.txt"
    text_file.write_text(TEXT, encoding="utf-8")
    args = ("-m", "smollm2-135m", "-m", "smollm2-135m@q8_0", "-c", "64", "--max-tokens", "128")
    table = footnote_cli(str(text_file), *args, home=tmp_path)
    assert table.returncode == 0, table.stderr.decode()
    assert "smollm2-135m@q8_0" in table.stdout.decode() and "Δ PPL" in table.stdout.decode()
    requantized = shared_model_dir / "SmolLM2-135M-Instruct.Q4_1.requant-q8_0.gguf"
    recorded = (shared_model_dir / (requantized.name + ".sha256")).read_text().split()[0]
    assert recorded == sha256_file(requantized)
    report = json.loads(footnote_cli(str(text_file), *args, "--json", home=tmp_path).stdout)
    first, second = report["results"]
    assert first["tokens_scored"] == second["tokens_scored"] == 126
    assert first["perplexity"] != second["perplexity"]
    assert second["perplexity"] == pytest.approx(first["perplexity"], rel=0.05)
