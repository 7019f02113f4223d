"""Exporting a sentence-transformers model to ONNX once, and opening sessions on the export.

The export holds the transformer, mean pooling and L2 normalisation in one graph, its
transformer operators fused by ONNX Runtime's optimizer; it is checked against the torch model's
own vectors on a set of probe texts and written into FOOTNOTE_HOME/models with its SHA-256 in a
manifest, so that later runs check the file against that hash and never import torch.
`OnnxEmbedder` (`footnote.models.onnx_embedder`) embeds with it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.registry import sha256_file, verify_file

log = logging.getLogger(__name__)

EXPORT_FORMAT = 4  # bumped whenever the exported graph changes, so old copies are re-exported
# ONNX Runtime can fuse each residual addition with the layer norm after it
# (SkipLayerNormalization); on the CPU that one operator took about 5 times as long as the two
# it replaces in MiniLM's int8 graph, so the export leaves them apart and embedder sessions keep
# ONNX Runtime's own optimizer from fusing them again: int8 embeds a quarter to a half faster,
# float a tenth to a fifth (`benchmarks/int8_variants.py`, retired,
# `int8_variants-no-amx-20261206-022134.json.xz`, `int8_variants-no-amx-20261206-022345.json.xz`).
KEPT_APART = ("SkipLayerNormFusion",)
MANIFEST = "export.json"
MIN_PROBE_COSINE = 0.99999  # exported vectors must match torch's this closely
PROBES = (
    "What does the Fresnel lens do?",
    "Lighthouses used whale oil before kerosene; the lens concentrated the flame into a beam "
    "visible for more than twenty nautical miles, which changed coastal navigation.",
    "灯塔的透镜是谁发明的？",
    "x",
    " ".join(["Long input that the model truncates at its window."] * 60),
)


@dataclass(frozen=True)
class ExportedModel:
    """An exported embedder on disk and what it takes to run it."""

    folder: Path
    dimension: int
    max_tokens: int
    token_types: bool  # whether the graph takes token_type_ids
    sha256: str = ""  # of the graph, as its manifest records it (empty while it is being made)
    precision: str = "fp32"  # of its weights

    @property
    def graph(self) -> Path:
        return self.folder / "model.onnx"

    @property
    def tokenizer(self) -> Path:
        return self.folder / "tokenizer.json"


def onnx_session(graph: Path, threads: int, disabled: Sequence[str] = ()) -> Any:
    """An ONNX Runtime session on the CPU; `disabled` names graph optimizers it must not apply."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about unused initializers are noise here
    return onnxruntime.InferenceSession(
        str(graph), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled)
    )


def embedder_session(graph: Path, threads: int) -> Any:
    """A session on an exported embedder, its residual additions and layer norms kept apart (see
    `KEPT_APART`)."""
    return onnx_session(graph, threads, disabled=KEPT_APART)


def exported_model(source: Path, models_dir: Path, name: str, verify: bool = True) -> ExportedModel:
    """The ONNX copy of the sentence-transformers folder `source` (called `name`), exported on
    first use. `verify=False` skips hashing the graph, for a caller that only reads its manifest.

    Raises ModelError when the model cannot be exported (its modules are not a transformer
    with mean pooling) or the export does not reproduce the torch vectors."""
    safe_name = re.sub(r"[^\w.-]+", "_", name)
    folder = models_dir / f"{safe_name}.onnx-{_source_key(source)}"
    return made_once(folder, lambda target: _export_checked(source, target), "export", verify)


def made_once(
    folder: Path, make: Callable[[Path], dict[str, Any]], verb: str, verify: bool = True
) -> ExportedModel:
    """The model in `folder`, made by `make(target)` on first use: written into a folder of its
    own and moved into place whole, so an interrupted run leaves nothing half-made, by one
    process at a time (another that needs it waits, then finds it made). Its manifest records
    the graph's SHA-256, checked on every later load unless `verify` is False."""
    if not (folder / MANIFEST).is_file():
        with _making(folder):
            _make(folder, make, verb)
    return load_manifest(folder, f"delete {folder} to {verb} again", verify)


@contextmanager
def _making(folder: Path) -> Iterator[None]:
    """Held while `folder` is made: an exclusive lock on a file beside it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    path = folder.with_name(f"{folder.name}.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            # Gone once the model is made. A process that opened it before then still holds it,
            # then finds the model made: at worst two processes make one model, and one is kept.
            path.unlink(missing_ok=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _make(folder: Path, make: Callable[[Path], dict[str, Any]], verb: str) -> None:
    if not (folder / MANIFEST).is_file():  # not made by the process the lock waited for
        partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        try:
            details = make(partial)
            details["sha256"] = sha256_file(partial / "model.onnx")
            (partial / MANIFEST).write_text(json.dumps(details, indent=2) + "\n", encoding="utf-8")
            try:
                os.replace(partial, folder)
            except OSError:
                if not (folder / MANIFEST).is_file():  # not a concurrent run that finished first
                    raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        log.info("made %s (%s)", folder, verb)


def load_manifest(folder: Path, fix: str, verify: bool = True) -> ExportedModel:
    """The model described by `folder`'s manifest, once its graph matches the recorded hash."""
    try:
        details = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        model = ExportedModel(
            folder,
            int(details["dimension"]),
            int(details["max_tokens"]),
            bool(details["token_types"]),
            str(details["sha256"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{folder / MANIFEST} is unreadable ({exc}); {fix}") from exc
    if verify:
        verify_file(model.graph, model.sha256, fix)
    return model


def _source_key(source: Path) -> str:
    """Changes whenever the source model's files or the export format do (cheap: no file reads)."""
    digest = hashlib.sha256(f"format {EXPORT_FORMAT}\n{source.resolve()}\n".encode())
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(source)} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _export_checked(source: Path, target: Path) -> dict[str, Any]:
    try:
        return _export(source, target)
    except (RuntimeError, ImportError, ValueError) as exc:
        raise ModelError(f"{source} could not be exported to ONNX ({exc})") from exc


def _sentence_transformer(source: Path) -> Any:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no "Loading weights" bar in a command's output
    return SentenceTransformer(str(source), device="cpu", local_files_only=True, trust_remote_code=False)


def load_torch_encoder(source: Path, token_types: bool) -> Any:
    """The torch module that the export of `source` was traced from: transformer, mean pooling
    and normalisation, taking the export's inputs in its order."""
    transformer, _ = _check_modules(_sentence_transformer(source), source)
    return pooled_encoder(transformer.auto_model.eval(), token_types).eval()


def _export(source: Path, target: Path) -> dict[str, Any]:
    import torch

    model = _sentence_transformer(source)
    transformer, pooling = _check_modules(model, source)
    backend = getattr(transformer.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ModelError(f"{source} has no fast tokenizer, so it cannot be exported to ONNX")
    token_types = "token_type_ids" in transformer.tokenizer.model_input_names
    encoder = transformer.auto_model.eval()
    # Traced with the plain attention (not the fused kernel torch picks by default), whose
    # graph ONNX Runtime's optimizer recognises and fuses below (transformers older than the
    # setter export as before, unfused).
    if hasattr(encoder, "set_attn_implementation"):
        encoder.set_attn_implementation("eager")
    traced = traced_graph(pooled_encoder(encoder, token_types).eval(), target, token_types)
    backend.save(str(target / "tokenizer.json"))
    max_tokens = int(model.max_seq_length or 256)
    exported = ExportedModel(target, int(pooling.get_embedding_dimension()), max_tokens, token_types)
    expected = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True)
    fused = fuse_graph(traced, exported.graph, encoder.config)
    cosine = _probe_cosine(expected, exported) if fused else 0.0
    if fused and cosine < MIN_PROBE_COSINE:
        log.warning("%s's fused graph strays from torch (cosine %.6f); kept as traced", source, cosine)
        fused = {}
    if fused:
        traced.unlink()
    else:
        os.replace(traced, exported.graph)
        cosine = _probe_cosine(expected, exported)
    if cosine < MIN_PROBE_COSINE:
        raise ModelError(
            f"the ONNX export of {source} differs from the torch model (cosine {cosine:.6f}); "
            "set FOOTNOTE_EMBED_RUNTIME=torch"
        )
    return {
        "format": EXPORT_FORMAT,
        "source": str(source),
        "dimension": exported.dimension,
        "max_tokens": max_tokens,
        "token_types": token_types,
        "fused": fused,
        "torch": torch.__version__,
    }


def traced_graph(graph: Any, target: Path, token_types: bool) -> Path:
    """The pooled encoder `graph` traced to `target/traced.onnx`, batch and length dynamic. It is
    traced with a padded row, so the graph keeps the masked path for padded batches."""
    import torch

    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_types else [])
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    sample = (torch.full((2, 8), 1000) * mask, mask) + ((torch.zeros_like(mask),) if token_types else ())
    traced = target / "traced.onnx"
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes on shape checks; the probes check the result
        torch.onnx.export(
            graph,
            sample,
            str(traced),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names},
            opset_version=17,
            dynamo=False,
        )
    return traced


def fuse_graph(graph: Path, target: Path, config: Any) -> dict[str, int]:
    """Writes `graph` to `target` with ONNX Runtime's fused transformer operators where its
    optimizer recognises them (the embedding with its layer norm, each attention, each GELU;
    residuals and layer norms stay apart, see `KEPT_APART`, and biases stay with their products)
    and returns how many of each it made; nothing is written when it makes none or fails on the
    graph. On MiniLM the fused graph embeds 1.8x as fast in float32 and, quantized, 2.9x as fast
    in int8 on a Xeon with AMX (2.4x torch's float32 with AMX withheld;
    `benchmarks/embed_runtimes.py`, docs/benchmarks.md)."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    heads = getattr(config, "num_attention_heads", None)
    hidden = getattr(config, "hidden_size", None)
    if not heads or not hidden:
        return {}
    fusions = FusionOptions("bert")
    fusions.enable_skip_layer_norm = False  # see KEPT_APART
    # A bias left to its matrix product (which ONNX Runtime folds into the int8 product) and a
    # plain GELU after it: int8 embeds as fast as with the two fused as BiasGelu, or slightly
    # faster (`int8_variants-no-amx-20261206-022134.json.xz`, `-022345.json.xz`).
    fusions.enable_bias_gelu = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimize_model(
                str(graph),
                model_type="bert",
                num_heads=int(heads),
                hidden_size=int(hidden),
                optimization_options=fusions,
                opt_level=0,
            )
    except Exception as exc:  # the optimizer raises bare Exceptions; the exported graph still serves
        log.warning("ONNX Runtime's optimizer could not fuse %s (%s); it is kept as exported", graph, exc)
        return {}
    counts = {name: int(n) for name, n in optimized.get_fused_operator_statistics().items() if n}
    if counts:
        optimized.save_model_to_file(str(target))
    return counts


def _check_modules(model: Any, source: Path) -> tuple[Any, Any]:
    kinds = [type(module).__name__ for module in model]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ModelError(f"{source} has modules {kinds}; only a transformer with pooling exports to ONNX")
    if model[1].get_config_dict().get("pooling_mode", "mean") != "mean":
        raise ModelError(f"{source} does not pool by mean; it cannot be exported to ONNX")
    return model[0], model[1]


def _probe_cosine(expected: np.ndarray, exported: ExportedModel) -> float:
    """The lowest cosine between the torch model's probe vectors (`expected`) and the graph's."""
    from footnote.models.onnx_embedder import OnnxEmbedder  # the embedder runs on what this module exports

    got = np.array(OnnxEmbedder(exported, "probe").embed_batch(PROBES))
    return float((expected * got).sum(axis=1).min())


def pooled_encoder(transformer: Any, token_types: bool) -> Any:
    """The transformer, mean pooling over real tokens and L2 normalisation as one torch module."""
    import torch

    class PooledEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, *token_type_ids: Any) -> Any:
            extra = {"token_type_ids": token_type_ids[0]} if token_types else {}
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask, **extra)[0]
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    return PooledEncoder()
