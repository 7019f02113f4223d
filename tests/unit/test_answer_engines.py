"""Answer models are opened by the engine their name picks, from one registry of engines."""

from __future__ import annotations

from pathlib import Path

import pytest

import footnote.models.llama
from footnote.application import create_app
from footnote.config import Settings
from footnote.models import engines
from footnote.models.base import Generator
from footnote.models.engines import answer_engine, engine_and_model, engine_names
from tests.fakes import HashingEmbedder, ScriptedGenerator


@pytest.fixture
def scripted_engine(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """An engine named `scripted`, registered the normal way; records what it was asked to open."""
    monkeypatch.setattr(engines, "_ENGINES", dict(engines._ENGINES))
    opened: list[tuple[str, str]] = []

    @answer_engine("scripted")
    def open_scripted(model: str, settings: Settings, display_name: str) -> Generator:
        opened.append((model, display_name))
        generator = ScriptedGenerator([f"A reply from {model}."])
        generator.name = display_name
        return generator

    return opened


def test_a_name_without_a_registered_engine_is_a_model_of_llama_cpp() -> None:
    assert engine_names()[0] == "llama.cpp"
    assert engine_and_model("smollm2-135m@q8_0") == ("llama.cpp", "smollm2-135m@q8_0")
    assert engine_and_model("llama.cpp:/models/a.gguf") == ("llama.cpp", "/models/a.gguf")
    assert engine_and_model("/models/with:colon.gguf") == ("llama.cpp", "/models/with:colon.gguf")


def test_the_default_engine_runs_the_gguf_the_settings_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    loaded: list[tuple[Path, str]] = []

    class Loaded(ScriptedGenerator):
        def __init__(self, path: Path, display_name: str, **_: object) -> None:
            super().__init__([])
            loaded.append((path, display_name))

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(footnote.models.llama, "LlamaCppGenerator", Loaded)
    settings = Settings(home=tmp_path / "home", llm=str(gguf), llm_quantization="")
    app = create_app(settings, embedder=HashingEmbedder())
    try:
        assert isinstance(app.generator, Loaded)
        assert loaded == [(gguf, str(gguf))]
    finally:
        app.close()


def test_a_registered_engine_opens_the_answer_model_it_is_named_for(
    scripted_engine: list[tuple[str, str]], tmp_path: Path
) -> None:
    assert "scripted" in engine_names()
    settings = Settings(home=tmp_path / "home", llm="scripted:tiny-model")
    app = create_app(settings, embedder=HashingEmbedder())
    try:
        generator = app.generator
        assert scripted_engine == [("tiny-model", "scripted:tiny-model")]
        assert generator.name == "scripted:tiny-model"
    finally:
        app.close()
