"""The layer contract in pyproject.toml (`lint-imports`): kept by the tree, broken by an upward import.

The contract is run twice with import-linter's own checker: on footnote itself, and on a
small package laid out in the same layers whose store imports retrieval, one layer up.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def contract(contract_id: str) -> dict[str, object]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    found: dict[str, object] = next(c for c in config["contracts"] if c["id"] == contract_id)
    return found


def layers_contract() -> dict[str, object]:
    return contract("layers")


def _package(root: Path, name: str, layers: list[str], upward: bool) -> None:
    """A package `name` with one module per layer package; with `upward`, store imports retrieval."""
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("", encoding="utf-8")
    for layer in layers:
        for part in (p.strip() for p in layer.split("|")):
            if part.startswith("__"):
                (root / name / f"{part}.py").write_text("", encoding="utf-8")
                continue
            (root / name / part).mkdir()
            (root / name / part / "__init__.py").write_text("", encoding="utf-8")
    (root / name / "store" / "catalog.py").write_text(
        f"from {name}.core import span\n" + (f"from {name}.retrieval import hits\n" if upward else ""),
        encoding="utf-8",
    )
    (root / name / "core" / "span.py").write_text("", encoding="utf-8")
    (root / name / "retrieval" / "hits.py").write_text(
        f"from {name}.store import catalog\n", encoding="utf-8"
    )


def _check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upward: bool) -> tuple[int, str]:
    contract = layers_contract()
    layers = list(contract["layers"])  # type: ignore[call-overload]
    name = f"layered_{'up' if upward else 'down'}"
    _package(tmp_path, name, layers, upward)
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f'[tool.importlinter]\nroot_package = "{name}"\n\n[[tool.importlinter.contracts]]\n'
        f'name = "layers"\ntype = "layers"\ncontainers = ["{name}"]\n'
        f"layers = [{', '.join(repr(layer).replace(chr(39), chr(34)) for layer in layers)}]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return lint_imports(config_filename=str(config), no_cache=True, no_logo=True), name


def test_the_contract_fails_on_an_upward_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, name = _check(tmp_path, monkeypatch, upward=True)
    out = capsys.readouterr().out
    assert code == 1, out
    assert "BROKEN" in out
    assert f"{name}.store.catalog -> {name}.retrieval.hits" in out


def test_the_same_layers_without_the_upward_import_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _check(tmp_path, monkeypatch, upward=False)
    assert code == 0, capsys.readouterr().out


def test_footnote_keeps_its_contracts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import footnote

    monkeypatch.syspath_prepend(str(Path(footnote.__file__).parents[1]))
    monkeypatch.chdir(ROOT)
    code = lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_core_is_the_bottom_layer_but_for_errors() -> None:
    layers = [layer.replace(" ", "").split("|") for layer in layers_contract()["layers"]]  # type: ignore[attr-defined]
    assert "core" in layers[-2] and layers[-1] == ["errors"]


def test_nothing_that_decides_an_answer_imports_the_server() -> None:
    below = contract("answers-below-the-server")
    assert below["type"] == "forbidden" and below["forbidden_modules"] == ["footnote.server"]
    assert {"footnote.answer", "footnote.application"} <= set(below["source_modules"])  # type: ignore[call-overload]
    assert not below.get("allow_indirect_imports", False)


def test_evaluations_sit_above_the_application_they_run_on() -> None:
    layers = [layer.replace(" ", "").split("|") for layer in layers_contract()["layers"]]  # type: ignore[attr-defined]
    evaluation = next(i for i, layer in enumerate(layers) if "evaluation" in layer)
    assert evaluation < layers.index(["application"])
