"""Settings: defaults, environment, TOML file, precedence, and fail-fast validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from footnote.config import Settings, default_home


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    settings = Settings()

    assert settings.home == default_home().expanduser().resolve()
    assert settings.llm == "smollm2-135m"
    assert settings.embedder == "minilm-l6"
    assert (settings.chunk_tokens, settings.chunk_overlap) == (200, 20)
    assert (settings.keyword_candidates, settings.dense_candidates, settings.rrf_k) == (50, 50, 60)
    assert (settings.top_k, settings.context_tokens, settings.answer_tokens) == (5, 2048, 256)
    assert (settings.temperature, settings.seed, settings.threads, settings.embed_batch_size) == (
        0.0,
        0,
        0,
        32,
    )


def test_paths_derive_from_home(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "data", model_dir=None)

    assert settings.home == (tmp_path / "data").resolve()
    assert settings.catalog_path == settings.home / "catalog.sqlite3"
    assert settings.vector_path == settings.home / "vectors"
    assert settings.model_cache == settings.home / "models"
    assert not settings.home.exists()
    assert settings.ensure_home() == settings.home
    assert settings.home.is_dir()
    assert Settings(home=tmp_path / "data", model_dir=tmp_path / "m").model_cache == tmp_path / "m"
    assert Settings(home=tmp_path / "data", model_dir="").model_cache == settings.home / "models"


def test_environment_overrides_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FOOTNOTE_TOP_K", "7")
    monkeypatch.setenv("FOOTNOTE_LLM", "/models/other.gguf")
    monkeypatch.setenv("FOOTNOTE_TEMPERATURE", "0.5")
    monkeypatch.setenv("FOOTNOTE_CHUNK_TOKENS", "300")
    monkeypatch.setenv("FOOTNOTE_HOME", str(tmp_path / "env-home"))

    settings = Settings()

    assert settings.top_k == 7
    assert settings.llm == "/models/other.gguf"
    assert settings.temperature == 0.5
    assert settings.chunk_tokens == 300
    assert settings.home == (tmp_path / "env-home").resolve()


def test_embedder_languages_are_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOOTNOTE_EMBEDDER_LANGUAGES", "en, ZH")

    assert Settings().embedder_languages == ["en", "zh"]
    assert Settings(embedder_languages=[]).embedder_languages == []


def test_keyword_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOOTNOTE_TOP_K", "7")

    assert Settings(top_k=3).top_k == 3


def test_toml_named_by_footnote_config_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "my.toml", 'top_k = 9\nchunk_tokens = 300\nembedder = "my-embedder"\n')
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(config))

    settings = Settings()

    assert (settings.top_k, settings.chunk_tokens, settings.embedder) == (9, 300, "my-embedder")
    assert settings.rrf_k == 60  # untouched keys keep their defaults


def test_environment_beats_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "my.toml", "top_k = 9\nrrf_k = 20\n")
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(config))
    monkeypatch.setenv("FOOTNOTE_TOP_K", "4")

    settings = Settings()

    assert settings.top_k == 4
    assert settings.rrf_k == 20


def test_keyword_arguments_beat_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(write_toml(tmp_path / "my.toml", "top_k = 9\n")))

    assert Settings(top_k=2).top_k == 2


def test_toml_in_the_data_directory_is_read_without_footnote_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write_toml(home / "footnote.toml", "top_k = 11\n")
    monkeypatch.delenv("FOOTNOTE_CONFIG")
    monkeypatch.setenv("FOOTNOTE_HOME", str(home))

    assert Settings().top_k == 11


def test_a_missing_toml_file_is_not_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(tmp_path / "absent.toml"))

    assert Settings().top_k == 5


def test_footnote_config_with_tilde_expands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write_toml(tmp_path / "tilde.toml", "top_k = 12\n")
    monkeypatch.setenv("FOOTNOTE_CONFIG", "~/tilde.toml")

    assert Settings().top_k == 12


def test_footnote_home_with_tilde_expands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FOOTNOTE_HOME", "~/footnote-data")

    settings = Settings()

    assert settings.home == (tmp_path / "footnote-data").resolve()
    assert "~" not in str(settings.catalog_path)


def test_overlap_must_be_smaller_than_chunk() -> None:
    with pytest.raises(
        ValidationError, match=r"chunk_overlap \(32\) must be smaller than chunk_tokens \(32\)"
    ):
        Settings(chunk_tokens=32, chunk_overlap=32)
    with pytest.raises(ValidationError, match="chunk_overlap"):
        Settings(chunk_tokens=32, chunk_overlap=100)
    assert Settings(chunk_tokens=32, chunk_overlap=31).chunk_overlap == 31


def test_answer_tokens_must_leave_room_for_sources() -> None:
    with pytest.raises(ValidationError, match=r"answer_tokens \(1024\).*half of context_tokens \(2048\)"):
        Settings(answer_tokens=1024)
    assert Settings(answer_tokens=1023).answer_tokens == 1023
    assert Settings(context_tokens=4096, answer_tokens=1024).answer_tokens == 1024


def test_invalid_value_from_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOOTNOTE_ANSWER_TOKENS", "4096")

    with pytest.raises(ValidationError, match="answer_tokens"):
        Settings()


def test_unknown_toml_key_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = write_toml(tmp_path / "typo.toml", "top_kk = 9\n")
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(config))

    with pytest.raises(ValidationError) as caught:
        Settings()

    errors = caught.value.errors()
    assert [(e["type"], e["loc"]) for e in errors] == [("extra_forbidden", ("top_kk",))]


def test_unknown_keyword_argument_is_refused() -> None:
    with pytest.raises(ValidationError, match="extra"):
        Settings(no_such_setting=1)  # type: ignore[call-arg]


def test_non_integer_from_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOOTNOTE_TOP_K", "five")

    with pytest.raises(ValidationError) as caught:
        Settings()

    assert caught.value.errors()[0]["loc"] == ("top_k",)
    assert caught.value.errors()[0]["type"] == "int_parsing"


def test_non_integer_from_toml_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FOOTNOTE_CONFIG", str(write_toml(tmp_path / "bad.toml", "chunk_tokens = 2.5\n")))

    with pytest.raises(ValidationError, match="chunk_tokens"):
        Settings()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("top_k", 0),
        ("top_k", 101),
        ("chunk_tokens", 15),
        ("temperature", -0.1),
        ("temperature", 2.5),
        ("context_tokens", 256),
        ("keyword_candidates", 0),
        ("embed_batch_size", 2048),
        ("threads", -1),
    ],
)
def test_out_of_range_values_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(**{field: value})  # type: ignore[arg-type]

    assert caught.value.errors()[0]["loc"] == (field,)


def test_public_dict_is_json(tmp_path: Path) -> None:
    data = json.loads(json.dumps(Settings(home=tmp_path).public_dict()))

    assert data["home"] == str(tmp_path.resolve())
    assert data["top_k"] == 5
