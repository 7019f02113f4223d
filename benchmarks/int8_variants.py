"""What else might make the int8 embedder faster: quantization recipes, batch sizes, operator shares.

Takes the bundled MiniLM's fused float export (made as the application makes it) and, on the
first N SciFact abstracts cut at 200 tokens (an ingest chunk's size), in one run:

- times its int8 copies quantized three ways: int8 weights with one scale per output channel
  (what footnote ships), one scale per matrix, and uint8 weights; the shipped recipe on a graph
  whose biases and GELUs are fused (BiasGelu, which the export leaves apart); and the shipped
  copy (and the float graph) with ONNX Runtime left to fuse each residual addition with its layer
  norm, which footnote's sessions keep apart (`models.onnx_export.KEPT_APART`); each with its
  lowest cosine to the float graph's vectors;
- times the shipped int8 copy with batches limited to 200 to 8,192 padded positions
  (`models.base.padded_batches`; footnote uses 512);
- profiles the shipped int8 copy's operators (ONNX Runtime's own profiler) and prints the share
  of kernel time each operator type takes.

Saves the figures, with the CPU's flags, under benchmarks/results/.

    python benchmarks/int8_variants.py ../shared/data/scifact [--limit 400] [--withhold-amx]
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from footnote.bench.amx import corpus_arguments
from footnote.config import Settings
from footnote.models.base import padded_batches
from footnote.models.cpu import machine
from footnote.models.onnx_export import KEPT_APART, exported_model
from footnote.models.onnx_int8 import quantized_model
from footnote.models.registry import resolve_embedder

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK_TOKENS = 200
POSITION_LIMITS = (200, 384, 512, 768, 1024, 2048, 4096, 8192)


def _session(graph: Path, profile_prefix: str | None = None, disabled: tuple[str, ...] = KEPT_APART) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return onnxruntime.InferenceSession(
        str(graph), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled)
    )


def _feeds(encodings: list[Any]) -> dict[str, np.ndarray]:
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _batches(encodings: list[Any], positions: int) -> list[tuple[list[int], dict[str, np.ndarray]]]:
    groups = padded_batches([len(e.ids) for e in encodings], 32, positions)
    return [(rows, _feeds([encodings[i] for i in rows])) for rows in groups]


def _run(
    session: Any, batches: list[tuple[list[int], dict[str, np.ndarray]]], count: int
) -> tuple[float, np.ndarray]:
    """The best of two timed passes over `batches`, and the vectors in input order."""
    session.run(None, batches[0][1])
    best = float("inf")
    vectors = np.zeros((count, 0), dtype=np.float32)
    for _ in range(2):
        started = time.perf_counter()
        outputs = [(rows, session.run(None, feeds)[0]) for rows, feeds in batches]
        best = min(best, time.perf_counter() - started)
        vectors = np.zeros((count, outputs[0][1].shape[1]), dtype=np.float32)
        for rows, out in outputs:
            vectors[rows] = out
    return best, vectors


def _quantize(source: Path, target: Path, per_channel: bool, unsigned: bool) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)
    quantize_dynamic(
        source,
        target,
        weight_type=QuantType.QUInt8 if unsigned else QuantType.QInt8,
        per_channel=per_channel,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def _with_bias_gelu(graph: Path, target: Path) -> Path:
    """`graph` with each bias addition and the GELU after it fused into one BiasGelu operator
    (which the export leaves apart)."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    options.enable_skip_layer_norm = False
    optimized = optimize_model(
        str(graph),
        model_type="bert",
        num_heads=12,
        hidden_size=384,
        optimization_options=options,
        opt_level=0,
    )
    optimized.save_model_to_file(str(target))
    return target


def _operator_shares(graph: Path, batches: list[tuple[list[int], dict[str, np.ndarray]]]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="footnote-profile-") as scratch:
        session = _session(graph, str(Path(scratch) / "profile"))
        for _, feeds in batches[:24]:
            session.run(None, feeds)
        events = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
    kernel = Counter[str]()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            kernel[event["args"]["op_name"]] += event["dur"]
    total = sum(kernel.values()) or 1
    return {
        name: round(micros / total, 3) for name, micros in kernel.most_common() if micros / total >= 0.005
    }


def main() -> None:
    args, amx_label = corpus_arguments(__doc__, limit=400)
    from tokenizers import Tokenizer

    export = exported_model(Path(resolve_embedder("minilm-l6")), Settings().model_cache, "minilm-l6")
    shipped = quantized_model(export)
    tokenizer = Tokenizer.from_file(str(export.tokenizer))
    tokenizer.no_padding()
    tokenizer.enable_truncation(CHUNK_TOKENS)
    with (args.dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for _, line in zip(range(args.limit), lines, strict=False)]
    encodings = tokenizer.encode_batch([f"{row.get('title', '')}\n\n{row['text']}" for row in rows])
    tokens = sum(len(e.ids) for e in encodings)
    default = _batches(encodings, 512)

    recipes: dict[str, Any] = {}
    seconds, reference = _run(_session(export.graph), default, len(encodings))
    recipes["float32"] = {"tokens_per_second": round(tokens / seconds), "min_cosine_to_float": 1.0}
    with tempfile.TemporaryDirectory(prefix="footnote-int8-") as scratch:
        graphs = {"int8, a scale per output channel (shipped)": shipped.graph}
        for name, per_channel, unsigned in (
            ("int8, one scale per matrix", False, False),
            ("uint8 weights, one scale per matrix", False, True),
        ):
            graphs[name] = Path(scratch) / f"{len(graphs)}.onnx"
            _quantize(export.graph, graphs[name], per_channel, unsigned)
        fused_gelu = "int8, a scale per output channel, bias and GELU fused"
        graphs[fused_gelu] = Path(scratch) / "bias-gelu-int8.onnx"
        bias_gelu = _with_bias_gelu(export.graph, Path(scratch) / "bias-gelu.onnx")
        _quantize(bias_gelu, graphs[fused_gelu], True, False)
        sessions = {name: _session(graph) for name, graph in graphs.items()}
        sessions["float32, residual and layer norm fused"] = _session(export.graph, disabled=())
        sessions["int8 shipped, residual and layer norm fused"] = _session(shipped.graph, disabled=())
        for name, session in sessions.items():
            seconds, vectors = _run(session, default, len(encodings))
            recipes[name] = {
                "tokens_per_second": round(tokens / seconds),
                "min_cosine_to_float": round(float((vectors * reference).sum(axis=1).min()), 4),
            }

    session = _session(shipped.graph)
    positions = {}
    for limit in POSITION_LIMITS:
        batches = _batches(encodings, limit)
        seconds, _ = _run(session, batches, len(encodings))
        positions[str(limit)] = {"runs": len(batches), "tokens_per_second": round(tokens / seconds)}

    report = {
        "benchmark": "int8_variants",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "texts": len(encodings),
        "tokens": tokens,
        "recipes_at_512_positions": recipes,
        "shipped_int8_by_batch_positions": positions,
        "shipped_int8_operator_shares": _operator_shares(shipped.graph, default),
    }
    print(json.dumps(report, indent=2))
    RESULTS.mkdir(exist_ok=True)
    label = amx_label
    path = RESULTS / f"int8_variants{label}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
