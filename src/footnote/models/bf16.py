"""An embedder whose bulk work runs in bfloat16 through torch, for CPUs with AMX tiles.

On such a CPU, torch's bf16 matrix products embed SciFact about 3x faster than float32 and
2.6x faster than ONNX Runtime's int8 copy (`benchmarks/embed_runtimes.py`), with vectors
within 3e-5 in cosine of the float model's. A single query is too short for that to pay:
torch's per-call overhead makes it several times slower than ONNX Runtime, and loading torch
costs more than bf16 saves on a few texts. So large batches (an ingest's) go through torch in
bf16, and single texts and small batches through the checked float ONNX export of the same
model; the two are checked against each other on the probe texts before the first bf16 batch
is embedded. The index records `torch-bf16`, the runtime and precision of the vectors it stores.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.base import Vector, precision_name
from footnote.models.onnx_embedder import OnnxEmbedder
from footnote.models.onnx_export import PROBES, ExportedModel, load_torch_encoder

# bf16 keeps 8 bits of mantissa; the products accumulate in float, so MiniLM's bf16 vectors stay
# within 3e-5 in cosine of the float ones on SciFact abstracts and the probes. A model that
# strays further is refused rather than mixed with float query vectors.
MIN_BF16_PROBE_COSINE = 0.9995
# Fewer texts than this in one call (a question's sources being checked, a small file) go through
# the float export as well: loading torch would cost more than bf16 saves on them.
TORCH_MIN_TEXTS = 128


class Bf16Embedder(OnnxEmbedder):
    """Batches in bf16 through torch; single texts through the float ONNX export `model`."""

    runtime = "torch"

    def __init__(
        self, model: ExportedModel, source: Path, model_name: str, batch_size: int = 32, threads: int = 0
    ) -> None:
        """`model` is the float export of the sentence-transformers folder `source`."""
        # A float query is slower than an int8 one on one thread; on two it comes close.
        super().__init__(model, model_name, batch_size, threads, query_threads=2)
        self.precision = "bf16"
        self.name = precision_name(model_name, "bf16")
        self._source = source
        self._encoder: Any = None
        self._encoder_lock = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        if len(texts) < TORCH_MIN_TEXTS:
            return super().embed_batch(texts)
        self._checked_encoder()
        # Fixed batches: torch's per-call overhead outweighs the padding a position limit saves.
        return self._embed_sorted(texts, self._bf16, positions=self.batch_size * self.max_tokens)

    def _bf16(self, encodings: Sequence[Any]) -> np.ndarray:
        import torch

        feeds = [torch.from_numpy(array) for array in self._feeds(encodings).values()]
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            vectors = self._encoder(*feeds)
        result: np.ndarray = vectors.float().numpy()
        return result

    def _checked_encoder(self) -> None:
        with self._encoder_lock:
            if self._encoder is None:
                import torch

                torch.set_num_threads(self._threads)
                self._encoder = load_torch_encoder(self._source, self._model.token_types)
                self._check_probes()

    def _check_probes(self) -> None:
        """The bf16 vectors of the probes against the float export's (which queries use)."""
        bf16 = np.concatenate([self._bf16([self._tokenizer.encode(text)]) for text in PROBES])
        exact = np.array([self._embed_one(text) for text in PROBES])
        cosine = float((bf16 * exact).sum(axis=1).min())
        if cosine < MIN_BF16_PROBE_COSINE:
            self._encoder = None
            raise ModelError(
                f"{self._source} in bf16 strays from its float vectors (cosine {cosine:.5f} < "
                f"{MIN_BF16_PROBE_COSINE}); set FOOTNOTE_EMBED_PRECISION=fp32 or int8"
            )
