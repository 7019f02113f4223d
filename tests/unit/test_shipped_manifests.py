"""The manifests footnote ships beside its own models record no path of the machine that made them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MODELS = Path(__file__).resolve().parents[2] / "src" / "footnote" / "models"
MANIFESTS = sorted(p for p in MODELS.glob("*/*.json") if p.name != "tokenizer.json")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_there_are_manifests_to_check() -> None:
    assert {p.name for p in MANIFESTS} >= {"reader.json", "shape.json"}


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.name)
def test_a_manifest_names_no_local_path(manifest: Path) -> None:
    local = [s for s in strings(json.loads(manifest.read_text(encoding="utf-8"))) if s.startswith(("/", "~"))]
    assert not local, f"{manifest.name} records paths of the machine that made it: {local}"
