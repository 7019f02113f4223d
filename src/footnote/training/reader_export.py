"""Writing a trained reader as footnote ships it: an int8 ONNX graph, its tokenizer and a manifest.

The float graph is exported from torch, quantized to int8 (weights per output channel,
activations per batch; the feed-forward layers' second projection stays float, see
`_float_nodes`) and both are checked against torch's own logits on probe pairs before
anything is written; the manifest records the data, the licence and the SHA-256 of each file,
which the registry pins.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.registry import sha256_file
from footnote.models.sentence_reader import OnnxSentenceReader, ReaderFiles, reader_input
from footnote.training.reader_fit import load_tokenizer

MANIFEST_FORMAT = 1
# The int8 graph's logits may stray this far from torch's on the probes (logits span about
# -10 to 10; a pass over SQuAD gave 0.40 on the 300-word probe).
MAX_INT8_DRIFT = 1.0
PROBES = (
    (
        "Who invented the Fresnel lens?",
        reader_input("It was invented by Augustin-Jean Fresnel in 1822.", "Lenses"),
    ),
    (
        "Which option keeps the input files?",
        reader_input("-k, --keep  Keep (don't delete) input files.", "gzip"),
    ),
    ("How many legs does a bee have?", reader_input("Bees collect nectar from flowers.", "Honeybees")),
    ("x", reader_input("y " * 300, "long")),
)


def export_reader(model: Any, base: Path, target: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Write `model` (trained on `base`'s tokenizer) into `target` and return its manifest."""
    with tempfile.TemporaryDirectory() as scratch:
        float_graph = Path(scratch) / "float.onnx"
        export_float_graph(model, base, float_graph)
        staging = Path(scratch) / "reader"
        staging.mkdir()
        _quantize(float_graph, staging / "model.onnx")
        shutil.copy2(base / "tokenizer.json", staging / "tokenizer.json")
        drift = _probe_drift(model, base, staging)
        if drift > MAX_INT8_DRIFT:
            raise ModelError(
                f"the int8 reader strays from torch by {drift:.3f} on the probes (> {MAX_INT8_DRIFT})"
            )
        files = {name: sha256_file(staging / name) for name in ("model.onnx", "tokenizer.json")}
        described = {
            **manifest,
            "format": MANIFEST_FORMAT,
            "weights": "int8, one scale per output channel; activations quantized per batch; "
            "the feed-forward layers' output projections in float",
            "max_int8_drift": round(drift, 4),
            "files": files,
        }
        (staging / "reader.json").write_text(json.dumps(described, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(staging, target)
    return described


def export_float_graph(model: Any, base: Path, target: Path) -> None:
    """`model` as a float ONNX graph (batch and length dynamic), before quantization."""
    import torch

    from footnote.models.sentence_reader import pair_arrays

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = load_tokenizer(base).encode_batch(list(PROBES[:2]))
    feeds = pair_arrays([e.ids for e in sample], [e.type_ids for e in sample])
    with torch.inference_mode():
        torch.onnx.export(
            model.eval(),
            tuple(torch.from_numpy(feeds[n]) for n in names),
            str(target),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        kept = _float_nodes(source)
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=kept)
    finally:
        quiet.setLevel(level)


def _float_nodes(graph: Path) -> list[str]:
    """The feed-forward layers' output projections, left in float. They read GELU's outputs, a
    wide one-sided range that one uint8 scale per batch flattens: for the shipped reader, over 60
    technical questions' candidates, every layer in int8 moved the logits 0.34 on average and
    changed the best candidate of 8% of the questions; these kept float, 0.20 and 5%, for 10 MB
    and 4% more time (benchmarks/results/reader_int8-answer-head-reader-20261205-113436.json.xz)."""
    import onnx

    nodes = onnx.load(str(graph), load_external_data=False).graph.node
    projections = [n.name for n in nodes if n.op_type == "MatMul" and "/output/dense/" in n.name]
    return [name for name in projections if "/attention/" not in name]


def _probe_drift(model: Any, base: Path, folder: Path) -> float:
    """The largest gap between torch's and the int8 graph's logits on the probes."""
    import torch

    from footnote.models.sentence_reader import pair_arrays

    tokenizer = load_tokenizer(base)
    onnx = OnnxSentenceReader(ReaderFiles(folder), threads=1)
    gaps: list[float] = []
    for question, candidate in PROBES:
        encoded = tokenizer.encode_batch([(question, candidate)])
        feeds = pair_arrays([e.ids for e in encoded], [e.type_ids for e in encoded])
        with torch.inference_mode():
            expected = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).reshape(-1).tolist()
        reading = onnx.read_batch(question, [candidate])
        got = [*reading.scores, *(reading.answered or [])]
        gaps.extend(abs(a - b) for a, b in zip(expected, got, strict=True))
    return float(np.max(gaps))


def ranking_report(scores: Sequence[Sequence[float]], labels: Sequence[Sequence[int]]) -> dict[str, float]:
    """How often the best-scored candidate answers (answerable questions), and how well the best
    score tells answerable from unanswerable questions (ROC AUC)."""
    top = [lab[int(np.argmax(s))] > 0 for s, lab in zip(scores, labels, strict=True) if any(lab)]
    best = np.array([max(s) for s in scores])
    answerable = np.array([any(lab) for lab in labels])
    return {"top1": round(float(np.mean(top)), 4) if top else 0.0, "auc": round(roc_auc(best, answerable), 4)}


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a positive outscores a negative (ties count half)."""
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return float("nan")
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))
