"""The bf16 embedder: batches through torch in bfloat16, single texts through the float ONNX
export, both within a hair of the float model's vectors; an index built with it keeps it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.errors import ModelError
from footnote.models import bf16
from footnote.models.bf16 import Bf16Embedder
from footnote.models.onnx_embedder import OnnxEmbedder
from tests.unit.server_fixtures import write_corpus

TEXTS = [
    "The Fresnel lens concentrates a lighthouse's light into a beam.",
    "Kerosene replaced whale oil in lighthouse lamps.",
    "灯塔的透镜是谁发明的？",
    " ".join(["A long abstract that runs past the model's window."] * 50),
]


def test_bf16_vectors_match_the_float_model_and_queries_match_batches(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "a", embed_precision="bf16"))
    embedder = app.embedder
    assert isinstance(embedder, Bf16Embedder)
    assert (embedder.name, embedder.identity) == ("minilm-l6-bf16", "minilm-l6@torch-bf16")
    exact = create_app(Settings(home=tmp_path / "b", embed_precision="fp32")).embedder
    assert isinstance(exact, OnnxEmbedder) and not isinstance(exact, Bf16Embedder)

    many = TEXTS * (bf16.TORCH_MIN_TEXTS // len(TEXTS) + 1)  # an ingest-sized call goes through torch
    batch = np.array(embedder.embed_many(many))[: len(TEXTS)]
    expected = np.array(exact.embed_many(TEXTS))
    cosines = (batch * expected).sum(axis=1)
    assert cosines.min() > bf16.MIN_BF16_PROBE_COSINE
    assert cosines.max() < 1 - 1e-9  # really computed in bf16, not the float graph renamed
    # Queries and small calls (a question's sources being checked) go through the float export.
    single = np.array([embedder.embed(text) for text in TEXTS])
    assert np.allclose(single, expected, atol=1e-5)
    assert np.allclose(np.array(embedder.embed_many(TEXTS)), expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_a_bf16_copy_that_strays_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bf16, "MIN_BF16_PROBE_COSINE", 1.0001)
    embedder = create_app(Settings(home=tmp_path / "home", embed_precision="bf16")).embedder
    with pytest.raises(ModelError, match=r"strays from its float vectors.*FOOTNOTE_EMBED_PRECISION=fp32"):
        embedder.embed_many(TEXTS * bf16.TORCH_MIN_TEXTS)


def test_onnx_has_no_bf16(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "home", embed_runtime="onnx", embed_precision="bf16"))
    with pytest.raises(ModelError, match="FOOTNOTE_EMBED_RUNTIME=torch"):
        _ = app.embedder


def test_an_index_keeps_the_choice_it_was_built_with(tmp_path: Path) -> None:
    """Built in bf16, then opened with every setting on auto: bf16 again, on any CPU; opened with
    int8 asked for: refused, naming the settings that open it."""
    settings = Settings(home=tmp_path / "home", embed_precision="bf16")
    built = create_app(settings)
    built.ingest([write_corpus(tmp_path / "corpus")])
    built.close()

    reopened = create_app(Settings(home=tmp_path / "home"))
    assert reopened.embedder.identity == "minilm-l6@torch-bf16"
    assert reopened.search("Fresnel lens", limit=1)
    reopened.close()

    other = create_app(Settings(home=tmp_path / "home", embed_precision="int8"))
    with pytest.raises(Exception, match="FOOTNOTE_EMBED_PRECISION=bf16"):
        _ = other.vectors
    other.close()
