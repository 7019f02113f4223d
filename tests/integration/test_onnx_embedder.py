"""The bundled MiniLM exported to ONNX embeds as the torch model does, and the export is trusted
only while its hash holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.errors import ModelError
from footnote.models import onnx_export
from footnote.models.base import Embedder
from footnote.models.embedders import SentenceTransformerEmbedder
from footnote.models.onnx_embedder import OnnxEmbedder
from footnote.models.onnx_export import exported_model
from footnote.models.registry import resolve_embedder

TEXTS = [
    "Who invented the Fresnel lens?",
    "咖啡起源于埃塞俄比亚，后来传到也门。",
    "Ünïcödé accents, emoji 🙂 and numbers 1,234.5",
    " ".join(["A sentence long enough that the model must truncate it."] * 80),
    "x",
]


def test_exported_vectors_equal_the_torch_models(real_embedder: Embedder, torch_embedder: Embedder) -> None:
    assert isinstance(real_embedder, OnnxEmbedder)
    assert (real_embedder.name, real_embedder.dimension, real_embedder.max_tokens) == (
        torch_embedder.name,
        torch_embedder.dimension,
        torch_embedder.max_tokens,
    )
    # Equal to 1e-5, not equal: an index records which runtime made its vectors.
    assert real_embedder.identity == "minilm-l6@onnx-fp32"
    assert torch_embedder.identity == "minilm-l6@torch-fp32"
    expected = np.array(torch_embedder.embed_batch(TEXTS))
    batch = np.array(real_embedder.embed_batch(TEXTS))
    single = np.array([real_embedder.embed(text) for text in TEXTS])
    assert (expected * batch).sum(axis=1).min() > 0.99999
    assert (expected * single).sum(axis=1).min() > 0.99999
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    for text in TEXTS:
        assert real_embedder.count_tokens(text) == torch_embedder.count_tokens(text)


def test_an_export_is_reused_and_a_tampered_one_refused(tmp_path: Path) -> None:
    source = Path(resolve_embedder("minilm-l6"))
    model = exported_model(source, tmp_path, "minilm-l6")
    manifest = json.loads((model.folder / "export.json").read_text())
    assert manifest["dimension"] == 384 and manifest["max_tokens"] == 256
    # Every layer's attention and GELU run as ONNX Runtime's fused operators; each residual
    # addition stays apart from its layer norm (KEPT_APART).
    assert manifest["fused"] == {
        "EmbedLayerNormalization": 1,
        "Attention": 6,
        "Gelu": 6,
        "LayerNormalization": 12,
    }
    operators = {node.op_type for node in onnx.load(str(model.graph)).graph.node}
    assert {"Attention", "LayerNormalization"} <= operators
    assert not {"Softmax", "SkipLayerNormalization"} & operators
    written = model.graph.stat().st_mtime_ns
    assert exported_model(source, tmp_path, "minilm-l6") == model
    assert model.graph.stat().st_mtime_ns == written  # not exported a second time
    with model.graph.open("r+b") as graph:
        graph.seek(-16, 2)
        graph.write(b"\0" * 16)
    with pytest.raises(ModelError, match=f"delete {model.folder} to export again"):
        exported_model(source, tmp_path, "minilm-l6")


def test_a_fused_graph_that_strays_from_torch_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stray(graph: Path, target: Path, config: object) -> dict[str, int]:
        # Stands in for an optimizer that rewrites a model's graph wrongly: one weight scaled.
        model = onnx.load(str(graph))
        weight = next(
            t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and t.dims == [384]
        )
        values = onnx.numpy_helper.to_array(weight) * 3.0
        weight.CopyFrom(onnx.numpy_helper.from_array(values, weight.name))
        onnx.save(model, str(target))
        return {"Attention": 6}

    monkeypatch.setattr(onnx_export, "fuse_graph", stray)
    source = Path(resolve_embedder("minilm-l6"))
    model = exported_model(source, tmp_path, "minilm-l6")
    assert json.loads((model.folder / "export.json").read_text())["fused"] == {}
    assert not (model.folder / "traced.onnx").exists()
    torch_embedder = SentenceTransformerEmbedder(str(source))
    expected = np.array(torch_embedder.embed_batch(TEXTS))
    got = np.array(OnnxEmbedder(model, "minilm-l6").embed_batch(TEXTS))
    assert (expected * got).sum(axis=1).min() > 0.99999


def test_a_model_that_does_not_pool_by_mean_is_embedded_with_torch_when_told(tmp_path: Path) -> None:
    copy = tmp_path / "cls-pooled"
    shutil.copytree(resolve_embedder("minilm-l6"), copy)
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config["pooling_mode"] = "cls"
    pooling.write_text(json.dumps(config))
    with pytest.raises(ModelError, match="does not pool by mean"):
        exported_model(copy, tmp_path / "models", "cls-pooled")
    settings = Settings(home=tmp_path / "home", embedder=str(copy), model_dir=tmp_path / "models")
    with pytest.raises(ModelError, match=r"does not pool by mean.*set FOOTNOTE_EMBED_RUNTIME=torch"):
        _ = create_app(settings).embedder
    app = create_app(settings.model_copy(update={"embed_runtime": "torch", "embed_precision": "int8"}))
    assert isinstance(app.embedder, SentenceTransformerEmbedder)
    assert app.embedder.identity == f"{copy}@torch-int8"


def test_the_application_embeds_through_onnx_unless_told_otherwise(tmp_path: Path) -> None:
    onnx_app = create_app(Settings(home=tmp_path / "a", embed_precision="fp32"))
    assert isinstance(onnx_app.embedder, OnnxEmbedder)
    torch_app = create_app(Settings(home=tmp_path / "b", embed_runtime="torch", embed_precision="fp32"))
    assert isinstance(torch_app.embedder, SentenceTransformerEmbedder)


def test_batches_sorted_by_length_keep_each_texts_vector_and_pad_less(shared_model_dir: Path) -> None:
    model = exported_model(Path(resolve_embedder("minilm-l6")), shared_model_dir, "minilm-l6")
    embedder = OnnxEmbedder(model, "minilm-l6", batch_size=2)
    # Long and short texts alternate, so batches taken in input order would be half padding.
    texts = [text for pair in zip(TEXTS[3:] * 3, TEXTS[:3] * 2, strict=False) for text in pair] + TEXTS
    lengths = [min(embedder.count_tokens(text), embedder.max_tokens) for text in texts]
    batch = np.array(embedder.embed_batch(texts))
    alone = np.array([embedder.embed_batch([text])[0] for text in texts])
    assert np.abs(batch - alone).max() < 1e-4  # in the caller's order, whatever the batching
    embedder.positions_run = embedder.tokens_run = 0
    embedder.embed_batch(texts)
    assert embedder.tokens_run == sum(lengths)
    in_input_order = sum(2 * max(lengths[i : i + 2]) for i in range(0, len(lengths) - 1, 2))
    in_input_order += lengths[-1] if len(lengths) % 2 else 0
    assert embedder.positions_run < in_input_order
