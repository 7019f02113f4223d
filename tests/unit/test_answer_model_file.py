"""The answer model runs from a requantized copy made once in the data directory."""

from __future__ import annotations

from pathlib import Path

from footnote.config import Settings
from footnote.models.gguf import answer_model_file
from footnote.models.registry import resolve_llm


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
