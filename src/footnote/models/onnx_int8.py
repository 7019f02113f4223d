"""An int8 copy of an ONNX embedder export, for faster embedding on a CPU.

ONNX Runtime's dynamic quantization stores the weights of every matrix multiplication as
int8 (one scale per output channel) and quantizes activations per batch at run time. The
copy is made once from the checked float export, kept in an `int8` folder inside it (so it
goes whenever the float export does), checked against the float vectors on the probe texts,
and hash-checked on every later load. Its vectors are close to the float ones but not equal,
so the embedder carries an `-int8` name and an `int8` precision in the identity its index
records, and an index is built and queried with one choice.
Activations share one scale per batch, so a text's vector also moves slightly (cosine about
0.99) with the texts batched beside it; embedding one text per batch would fix it at about a
quarter more time.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.onnx_embedder import OnnxEmbedder
from footnote.models.onnx_export import MANIFEST, PROBES, ExportedModel, made_once
from footnote.models.registry import verify_file

log = logging.getLogger(__name__)

INT8_FORMAT = 2  # bumped whenever the quantization recipe changes, so old copies are remade
INT8_FOLDER = f"int8-{INT8_FORMAT}"
# MiniLM's int8 copy (one scale per output channel) keeps 0.981-0.996 cosine to the float
# vectors on the probes, and at least 0.991 (0.995 on average) on SciFact abstracts. A coarser
# copy (one scale per weight matrix) falls to 0.90-0.97 on the probes and 0.936 on average on
# abstracts. 0.97 refuses such a copy while leaving per-channel rounding room on other models;
# what int8 does to retrieval quality is measured with `footnote eval retrieval`, not here.
MIN_INT8_PROBE_COSINE = 0.97


def quantized_model(model: ExportedModel) -> ExportedModel:
    """The int8 copy of `model`, quantized on first use.

    Raises ModelError when the copy cannot be made, strays from the float vectors, or no longer
    matches its recorded hash."""
    folder = model.folder / INT8_FOLDER
    quantized = made_once(folder, lambda target: _quantize(model, target), "quantize")
    recorded = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("quantized_from")
    if recorded != model.sha256:
        raise ModelError(f"{folder} was quantized from another export; delete {folder} to quantize again")
    return replace(quantized, precision="int8")


def _quantize(model: ExportedModel, target: Path) -> dict[str, Any]:
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The float graph may have been opened unchecked (only its manifest was needed until now).
    verify_file(model.graph, model.sha256, f"delete {model.folder} to export again")

    # The quantizer logs a suggestion to pre-process the graph on every call; the probes judge the result.
    quantizer_log = logging.getLogger()
    level = quantizer_log.level
    quantizer_log.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            model.graph,
            target / "model.onnx",
            weight_type=QuantType.QInt8,
            per_channel=True,
            # The fused operators' outputs have no inferred type; every activation is float32.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    except Exception as exc:  # onnxruntime raises bare Exceptions, and a failed copy must not stop embedding
        raise ModelError(
            f"{model.graph} could not be quantized to int8 ({exc}); set FOOTNOTE_EMBED_PRECISION=fp32"
        ) from exc
    finally:
        quantizer_log.setLevel(level)
    shutil.copy2(model.tokenizer, target / "tokenizer.json")
    quantized = ExportedModel(target, model.dimension, model.max_tokens, model.token_types, precision="int8")
    cosine = probe_cosine(model, quantized)
    if cosine < MIN_INT8_PROBE_COSINE:
        raise ModelError(
            f"the int8 copy of {model.graph} strays from the float vectors (cosine {cosine:.4f} "
            f"< {MIN_INT8_PROBE_COSINE}); set FOOTNOTE_EMBED_PRECISION=fp32"
        )
    return {
        "format": INT8_FORMAT,
        "dimension": model.dimension,
        "max_tokens": model.max_tokens,
        "token_types": model.token_types,
        "weights": "int8, one scale per output channel; activations quantized per batch",
        "quantized_from": model.sha256,
        "min_probe_cosine": round(cosine, 5),
        "onnxruntime": onnxruntime.__version__,
    }


def probe_cosine(reference: ExportedModel, candidate: ExportedModel) -> float:
    """The lowest cosine between the two models' vectors for the probe texts."""
    expected = np.array(OnnxEmbedder(reference, "reference").embed_batch(PROBES))
    got = np.array(OnnxEmbedder(candidate, "candidate").embed_batch(PROBES))
    return float((expected * got).sum(axis=1).min())
