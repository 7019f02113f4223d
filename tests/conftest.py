"""Shared fixtures. Tests never reach a model hub: everything loads from installed packages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from footnote.config import Settings
from footnote.models.base import Embedder, Generator

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads a developer's own settings or data."""
    for name in list(os.environ):
        if name.startswith("FOOTNOTE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(tmp_path / "no-such-footnote.toml"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    from footnote.models.embedders import SentenceTransformerEmbedder
    from footnote.models.registry import resolve_embedder

    return SentenceTransformerEmbedder(resolve_embedder("minilm-l6"), display_name="minilm-l6")


@pytest.fixture(scope="session")
def real_generator() -> Iterator[Generator]:
    from footnote.models.llama import LlamaCppGenerator
    from footnote.models.registry import resolve_llm

    yield LlamaCppGenerator(resolve_llm("smollm2-135m"), display_name="smollm2-135m", context_length=2048)
