"""Embedders backed by sentence-transformers."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from footnote.errors import ModelError
from footnote.models.base import Embedder, RecentVectors, Vector, precision_name


class SentenceTransformerEmbedder(Embedder):
    """Any sentence-transformers model: a local folder (loaded offline) or a hub id."""

    runtime = "torch"

    def __init__(
        self,
        name_or_path: str,
        display_name: str | None = None,
        batch_size: int = 32,
        quantize: bool = False,
    ) -> None:
        """`quantize` runs the model's linear layers in int8 (dynamic quantization): faster on CPU,
        with vectors close to but not equal to the float model's, so an index must be built and
        queried with the same choice."""
        # Imported here: torch takes seconds to import and many commands never embed.
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no "Loading weights" bar on every command

        local = Path(name_or_path).exists()
        try:
            self._model: Any = SentenceTransformer(
                name_or_path, device="cpu", local_files_only=local, trust_remote_code=False
            )
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"embedder '{name_or_path}' could not be loaded ({exc}); "
                "check FOOTNOTE_EMBEDDER names a sentence-transformers folder or model id"
            ) from exc
        if quantize:
            import torch

            self._model = torch.ao.quantization.quantize_dynamic(
                self._model, {torch.nn.Linear}, dtype=torch.qint8
            )
        self.model_name = display_name or name_or_path
        self.precision = "int8" if quantize else "fp32"
        self.name = precision_name(self.model_name, self.precision)
        # Renamed in sentence-transformers 6; the old name still exists but warns.
        get_dimension = getattr(self._model, "get_embedding_dimension", None)
        get_dimension = get_dimension or self._model.get_sentence_embedding_dimension
        dimension: int | None = get_dimension()
        self.dimension = dimension or 0
        self.max_tokens = self._model.max_seq_length or 256
        # A copy of the fast tokenizer for counting: `encode` sets padding and truncation on
        # its own tokenizer per call, so sharing it with a parsing thread corrupts batches.
        backend = getattr(self._model.tokenizer, "backend_tokenizer", None)
        self._counter: Any = copy.deepcopy(backend) if backend is not None else None
        if self._counter is not None:
            self._counter.no_padding()
            self._counter.no_truncation()
        # Another copy, truncating as `encode` does, for single queries on any thread.
        self._query_tokenizer: Any = copy.deepcopy(self._counter) if self._counter is not None else None
        if self._query_tokenizer is not None:
            self._query_tokenizer.enable_truncation(self.max_tokens)
        self._query_lock = threading.Lock()
        self._recent = RecentVectors()
        self.batch_size = batch_size

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [row.tolist() for row in vectors]

    def embed(self, text: str) -> Vector:
        """One text, straight through the model's modules: a query costs no batching overhead."""
        return self._recent.get_or_make(text, self._embed_one)

    def _embed_one(self, text: str) -> Vector:
        if self._query_tokenizer is None:
            return self.embed_batch([text])[0]
        import torch

        with self._query_lock:
            encoding = self._query_tokenizer.encode(text)
        features = {
            "input_ids": torch.tensor([encoding.ids]),
            "attention_mask": torch.tensor([encoding.attention_mask]),
            "token_type_ids": torch.tensor([encoding.type_ids]),
        }
        with torch.inference_mode():
            vector = self._model(features)["sentence_embedding"][0]
        vector = torch.nn.functional.normalize(vector.float(), dim=0)
        return [float(x) for x in vector.tolist()]

    def embed_many(self, texts: Sequence[str], batch_size: int = 32) -> list[Vector]:
        # sentence-transformers sorts by length and batches internally; one call is fastest.
        return self.embed_batch(texts)

    def count_tokens(self, text: str) -> int:
        if self._counter is not None:
            return len(self._counter.encode(text, add_special_tokens=True).ids)
        encoded = self._model.tokenizer(text, add_special_tokens=True, verbose=False)
        return len(encoded["input_ids"])

    def token_offsets(self, text: str) -> list[tuple[int, int]] | None:
        if self._counter is None:
            return None
        offsets: list[tuple[int, int]] = self._counter.encode(text, add_special_tokens=False).offsets
        return offsets
