"""The int8 copy of the bundled MiniLM's ONNX export: made once, trusted only while its hash holds,
close to the float vectors, and what the application embeds with when FOOTNOTE_EMBED_PRECISION is int8."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.errors import ModelError
from footnote.models import onnx_int8
from footnote.models.base import Embedder
from footnote.models.embedders import SentenceTransformerEmbedder
from footnote.models.onnx_embedder import OnnxEmbedder
from footnote.models.onnx_export import MANIFEST, ExportedModel, exported_model, load_manifest
from footnote.models.onnx_int8 import INT8_FOLDER, quantized_model
from footnote.models.registry import resolve_embedder

TEXTS = [
    "Who invented the Fresnel lens?",
    "咖啡起源于埃塞俄比亚，后来传到也门。",
    "Ünïcödé accents, emoji 🙂 and numbers 1,234.5",
    "Alterations of the architecture of cerebral white matter in the developing human brain can "
    "affect cortical development and result in functional disabilities. A line scan diffusion-"
    "weighted magnetic resonance imaging sequence with diffusion tensor analysis was applied.",
    " ".join(["A sentence long enough that the model must truncate it."] * 80),
    "x",
]


@pytest.fixture(scope="module")
def float_export(shared_model_dir: Path) -> ExportedModel:
    return exported_model(Path(resolve_embedder("minilm-l6")), shared_model_dir, "minilm-l6")


@pytest.fixture
def export_copy(float_export: ExportedModel, tmp_path: Path) -> ExportedModel:
    """A private copy of the float export, so a test may quantize or damage it freely."""
    folder = tmp_path / float_export.folder.name
    shutil.copytree(float_export.folder, folder, ignore=shutil.ignore_patterns(f"{INT8_FOLDER}*"))
    return load_manifest(folder, "copied for a test")


def test_the_int8_copy_is_made_once_and_a_tampered_one_refused(export_copy: ExportedModel) -> None:
    quantized = quantized_model(export_copy)
    assert quantized.folder == export_copy.folder / INT8_FOLDER
    manifest = json.loads((quantized.folder / MANIFEST).read_text())
    float_manifest = json.loads((export_copy.folder / MANIFEST).read_text())
    assert manifest["quantized_from"] == float_manifest["sha256"]
    assert manifest["min_probe_cosine"] >= onnx_int8.MIN_INT8_PROBE_COSINE
    # int8 weights take a quarter of the float ones' bytes; the embeddings table stays float.
    assert quantized.graph.stat().st_size < 0.5 * export_copy.graph.stat().st_size
    written = quantized.graph.stat().st_mtime_ns
    assert quantized_model(export_copy) == quantized
    assert quantized.graph.stat().st_mtime_ns == written  # not quantized a second time
    with quantized.graph.open("r+b") as graph:
        graph.seek(-16, 2)
        graph.write(b"\0" * 16)
    with pytest.raises(ModelError, match=f"delete {quantized.folder} to quantize again"):
        quantized_model(export_copy)


def test_an_int8_copy_of_another_export_is_refused(export_copy: ExportedModel) -> None:
    quantized = quantized_model(export_copy)
    manifest_path = quantized.folder / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["quantized_from"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match="quantized from another export"):
        quantized_model(export_copy)


def test_a_copy_that_strays_from_the_float_vectors_is_not_kept(
    export_copy: ExportedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(onnx_int8, "MIN_INT8_PROBE_COSINE", 1.0001)  # no int8 copy comes this close
    with pytest.raises(ModelError, match="strays from the float vectors"):
        quantized_model(export_copy)
    assert sorted(p.name for p in export_copy.folder.iterdir()) == [MANIFEST, "model.onnx", "tokenizer.json"]


def test_int8_vectors_are_close_to_the_float_ones_but_not_equal(
    real_embedder: Embedder, float_export: ExportedModel
) -> None:
    int8 = OnnxEmbedder(quantized_model(float_export), "minilm-l6")
    assert (int8.name, int8.identity) == ("minilm-l6-int8", "minilm-l6@onnx-int8")
    expected = np.array(real_embedder.embed_batch(TEXTS))
    batch = np.array(int8.embed_batch(TEXTS))
    single = np.array([int8.embed(text) for text in TEXTS])
    cosines = (expected * batch).sum(axis=1)
    assert cosines.min() > onnx_int8.MIN_INT8_PROBE_COSINE
    assert cosines.max() < 0.99999  # really another model, not the float graph under a new name
    # Activations are quantized with one scale per batch, so batch-mates move a vector a little.
    assert (batch * single).sum(axis=1).min() > onnx_int8.MIN_INT8_PROBE_COSINE
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    # The nearest text to each text's int8 vector is the same as with the float vectors.
    assert ((batch @ expected.T).argmax(axis=1) == np.arange(len(TEXTS))).all()


def test_the_application_embeds_with_the_int8_copy_when_told(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path / "a", embed_precision="int8"))
    embedder = app.embedder
    assert isinstance(embedder, OnnxEmbedder)
    assert (embedder.name, embedder.identity) == ("minilm-l6-int8", "minilm-l6@onnx-int8")
    assert app.settings.model_cache in embedder._model.graph.parents
    assert embedder._model.folder.name == INT8_FOLDER
    float_app = create_app(Settings(home=tmp_path / "b", embed_int8=False))  # the older spelling
    assert isinstance(float_app.embedder, OnnxEmbedder)
    assert (float_app.embedder.name, float_app.embedder.identity) == ("minilm-l6", "minilm-l6@onnx-fp32")
    torch_app = create_app(Settings(home=tmp_path / "c", embed_runtime="torch", embed_precision="int8"))
    assert isinstance(torch_app.embedder, SentenceTransformerEmbedder)
    assert torch_app.embedder.name == "minilm-l6-int8"
    assert torch_app.embedder.identity == "minilm-l6@torch-int8"


def test_without_a_trusted_int8_copy_the_application_refuses_rather_than_embed_with_torch(
    export_copy: ExportedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's vectors differ from ONNX Runtime's: taking its place would search an index built
    through ONNX Runtime with other vectors, so the error names both ways out instead."""
    monkeypatch.setattr(onnx_int8, "MIN_INT8_PROBE_COSINE", 1.0001)
    settings = Settings(home=tmp_path / "home", embed_precision="int8", model_dir=export_copy.folder.parent)
    with pytest.raises(ModelError) as caught:
        _ = create_app(settings).embedder
    message = str(caught.value)
    assert "strays from the float vectors" in message
    assert "FOOTNOTE_EMBED_PRECISION=fp32" in message and "FOOTNOTE_EMBED_RUNTIME=torch" in message
