"""A sentence-transformers embedder run by ONNX Runtime.

The model is exported once from its torch weights (`footnote.models.onnx_export`): transformer,
mean pooling and L2 normalisation in one graph, checked against the torch model's own vectors and
pinned by SHA-256; later runs never import torch. On a CPU, ONNX Runtime embeds one short query in
about half the time torch takes, which is most of a hybrid search's latency.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from footnote.models.base import (
    BATCH_POSITIONS,
    Embedder,
    RecentVectors,
    Vector,
    padded_batches,
    precision_name,
)
from footnote.models.onnx_export import ExportedModel, embedder_session


class OnnxEmbedder(Embedder):
    """Vectors equal (to 1e-5 in cosine) to the sentence-transformers model this was exported from."""

    runtime = "onnx"

    def __init__(
        self,
        model: ExportedModel,
        model_name: str,
        batch_size: int = 32,
        threads: int = 0,
        query_threads: int = 1,
    ) -> None:
        """`model_name` names the model alone; the name clients see marks an int8 copy. Single
        queries run on `query_threads`: on a busy CPU a second one costs an int8 graph more than
        it brings."""
        from tokenizers import Tokenizer

        self._model = model
        self.model_name = model_name
        self.precision = model.precision
        self.name = precision_name(model_name, model.precision)
        self.dimension = model.dimension
        self.max_tokens = model.max_tokens
        self.batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        self._counter = Tokenizer.from_file(str(model.tokenizer))
        self._counter.no_padding()
        self._counter.no_truncation()
        self._tokenizer = Tokenizer.from_file(str(model.tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(model.max_tokens)
        self._query_session = embedder_session(model.graph, threads=query_threads)
        self._batch_session: Any = None
        self._recent = RecentVectors()
        # Token positions run through the model in batches, and how many of them were real
        # tokens rather than padding: what a benchmark reports as the padding share.
        self.positions_run = 0
        self.tokens_run = 0

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        return self._embed_sorted(texts, self._run_batch)

    def _embed_sorted(
        self,
        texts: Sequence[str],
        run: Callable[[Sequence[Any]], np.ndarray],
        positions: int = BATCH_POSITIONS,
    ) -> list[Vector]:
        """Vectors of `texts`, batched by length (at most `positions` padded tokens in a batch)
        and run through `run`, in input order."""
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts))
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for rows in padded_batches([len(e.ids) for e in encodings], self.batch_size, positions):
            vectors[rows] = run([encodings[i] for i in rows])
        return vectors.tolist()

    def _run_batch(self, encodings: Sequence[Any]) -> np.ndarray:
        """Vectors for one batch of a bulk embed (single queries take `_embed_one`)."""
        if self._batch_session is None:
            self._batch_session = embedder_session(self._model.graph, threads=self._threads)
        return self._run(self._batch_session, encodings)

    def embed(self, text: str) -> Vector:
        return self._recent.get_or_make(text, self._embed_one)

    def _embed_one(self, text: str) -> Vector:
        vector: Vector = self._run(self._query_session, [self._tokenizer.encode(text)])[0].tolist()
        return vector

    def embed_many(self, texts: Sequence[str], batch_size: int = 32) -> list[Vector]:
        return self.embed_batch(texts)  # batches by length itself

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=True).ids)

    def token_offsets(self, text: str) -> list[tuple[int, int]] | None:
        offsets: list[tuple[int, int]] = self._counter.encode(text, add_special_tokens=False).offsets
        return offsets

    def _run(self, session: Any, encodings: Sequence[Any]) -> np.ndarray:
        result: np.ndarray = session.run(None, self._feeds(encodings))[0]
        return result

    def _feeds(self, encodings: Sequence[Any]) -> dict[str, np.ndarray]:
        """The model's inputs for one batch, padded to its longest text, and counted."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
            types[row, : len(encoding.ids)] = encoding.type_ids
        self.positions_run += mask.size
        self.tokens_run += int(mask.sum())
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._model.token_types:
            feeds["token_type_ids"] = types
        return feeds
