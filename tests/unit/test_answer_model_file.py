"""The answer model runs from a requantized copy made once in the data directory."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from footnote.config import Settings
from footnote.models.gguf import answer_model_file
from footnote.models.registry import resolve_llm, sha256_file
from footnote.models.requantize import requantized


def test_the_default_answer_model_is_a_cached_q8_0_copy(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    path = answer_model_file(settings)
    assert path.parent == settings.model_cache
    assert path.name.endswith(".requant-q8_0.gguf")
    assert path.with_name(path.name + ".sha256").is_file()
    assert path.read_bytes()[:4] == b"GGUF"
    assert answer_model_file(settings) == path  # reused, not made again


def test_an_empty_quantization_keeps_the_shipped_file(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, llm_quantization="")
    assert answer_model_file(settings) == resolve_llm("smollm2-135m")


def test_a_spec_with_its_own_quantization_is_kept(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, llm="smollm2-135m@q8_0", llm_quantization="f16")
    assert answer_model_file(settings).name.endswith(".requant-q8_0.gguf")


def _requantize_in(folder: str) -> str:
    return str(requantized(resolve_llm("smollm2-135m"), "q8_0", Path(folder), threads=1))


def test_two_processes_requantizing_one_model_at_once_both_get_the_copy(tmp_path: Path) -> None:
    # Two test workers or two servers on one model folder: each writes its own partial file.
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        made = pool.map(_requantize_in, [str(tmp_path)] * 2)
    assert made[0] == made[1]
    copy = Path(made[0])
    digest = copy.with_name(copy.name + ".sha256").read_text(encoding="utf-8").split()[0]
    assert digest == sha256_file(copy)
    assert not list(tmp_path.glob("*.partial"))
