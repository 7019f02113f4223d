"""Scoring in process with llama.cpp: one decode per window, logits only for scored rows.

The generator in `footnote.models.llama` is left alone; this opens its own context. A
window goes through a single `llama_decode` whose batch asks for logits only at the
positions that predict a scored token, and those rows are read in place through a
numpy view of llama.cpp's output buffer (no copy into Python lists, no full-vocab loop).
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from footnote.errors import ModelError
from footnote.models.llama import open_llama
from footnote.perplexity.errors import ScoringOptionError
from footnote.perplexity.logits import target_logprobs, top_logprobs
from footnote.perplexity.scorer import Tokenizer, TokenScorer


class LlamaCppTokenizer(Tokenizer):
    """The GGUF's own tokenizer, through llama.cpp's vocabulary."""

    owner: Any = None

    def __init__(self, vocab: Any) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._vocab = vocab
        self.add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
        bos = int(llama_cpp.llama_vocab_bos(vocab))
        self.bos_id = bos if bos >= 0 else None
        self.vocab_size = int(llama_cpp.llama_vocab_n_tokens(vocab))
        self._piece_buffer = ctypes.create_string_buffer(256)

    def tokenize(self, text: str) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 8
        ids = (self._lib.llama_token * capacity)()
        count = self._lib.llama_tokenize(self._vocab, data, len(data), ids, capacity, False, False)
        if count < 0:
            raise ModelError(f"llama.cpp could not tokenize {len(data)} bytes (needs {-count} tokens)")
        return ids[:count]

    def piece(self, token_id: int) -> bytes:
        buffer = self._piece_buffer
        size = self._lib.llama_token_to_piece(self._vocab, token_id, buffer, len(buffer), 0, False)
        if size < 0:
            buffer = ctypes.create_string_buffer(-size)
            size = self._lib.llama_token_to_piece(self._vocab, token_id, buffer, len(buffer), 0, False)
        return buffer.raw[:size]


class LlamaCppScorer(TokenScorer):
    """A GGUF model scored in this process; `context_length` is the longest window it accepts."""

    def __init__(
        self,
        model_path: Path,
        context_length: int = 512,
        threads: int = 0,
        display_name: str | None = None,
    ) -> None:
        # flash attention: on CPU about 1.4x the batch throughput of the unfused attention
        self._llm: Any = open_llama(
            model_path,
            n_ctx=context_length,
            threads=threads,
            n_batch=context_length,
            n_ubatch=min(context_length, 512),
            logits_all=False,
        )
        self.name = display_name or model_path.name
        self.model_path = model_path
        self.trained_context = int(self._llm._model.n_ctx_train())
        if context_length > self.trained_context:
            self.close()
            raise ScoringOptionError(
                f"context length {context_length} is above {self.name}'s training context of "
                f"{self.trained_context} tokens; use --context-length {self.trained_context} or less"
            )
        self.context_length = context_length
        self.tokenizer = LlamaCppTokenizer(self._llm._model.vocab)
        self._n_vocab = int(self._llm.n_vocab())
        self._batch = _Batch(context_length)

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        logits = self._decode(token_ids, first_scored)
        return target_logprobs(logits, np.asarray(token_ids[first_scored:], dtype=np.intc))

    def score_window_top(
        self, token_ids: Sequence[int], first_scored: int, n: int
    ) -> tuple[list[float], list[list[tuple[int, float]]]]:
        """As `score_window`, plus the `n` likeliest tokens at each scored position (for echo APIs)."""
        logits = self._decode(token_ids, first_scored)
        return top_logprobs(logits, np.asarray(token_ids[first_scored:], dtype=np.intc), n)

    def _decode(self, token_ids: Sequence[int], first_scored: int) -> npt.NDArray[np.float32]:
        """One llama_decode of the window; a view of the logits rows that predict scored tokens."""
        import llama_cpp

        n = len(token_ids)
        if not 1 <= first_scored < n <= self.context_length:
            raise ValueError(
                f"bad window: {n} tokens, first scored {first_scored}, max {self.context_length}"
            )
        ctx = self._llm._ctx.ctx
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        self._batch.load(token_ids, first_scored - 1, n - 1)
        status = llama_cpp.llama_decode(ctx, self._batch.batch)
        if status != 0:
            raise ModelError(f"llama.cpp could not evaluate a window of {n} tokens (llama_decode {status})")
        rows = n - first_scored
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits(ctx), shape=(rows, self._n_vocab))

    def close(self) -> None:
        batch = getattr(self, "_batch", None)
        if batch is not None:
            batch.free()
        llm = getattr(self, "_llm", None)
        if llm is not None:
            llm.close()


class _Batch:
    """A llama_batch for one sequence, written through numpy views of its arrays."""

    def __init__(self, capacity: int) -> None:
        import llama_cpp

        self.batch: Any = llama_cpp.llama_batch_init(capacity, 0, 1)
        self._tokens = np.ctypeslib.as_array(self.batch.token, shape=(capacity,))
        self._positions = np.ctypeslib.as_array(self.batch.pos, shape=(capacity,))
        self._wants_logits = np.ctypeslib.as_array(self.batch.logits, shape=(capacity,))
        np.ctypeslib.as_array(self.batch.n_seq_id, shape=(capacity,))[:] = 1
        for i in range(capacity):
            self.batch.seq_id[i][0] = 0
        self._positions[:] = np.arange(capacity)

    def load(self, token_ids: Sequence[int], first_output: int, end_output: int) -> None:
        """Tokens at positions 0..n-1, with logits for rows first_output..end_output-1."""
        n = len(token_ids)
        self._tokens[:n] = token_ids
        self._wants_logits[:n] = 0
        self._wants_logits[first_output:end_output] = 1
        self.batch.n_tokens = n

    def free(self) -> None:
        import llama_cpp

        if self.batch is not None:
            llama_cpp.llama_batch_free(self.batch)
            self.batch = None


class _VocabularyOnly:
    """A GGUF loaded without weights; frees itself when the tokenizer holding it goes."""

    def __init__(self, model_path: Path) -> None:
        import llama_cpp

        self._lib = llama_cpp
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        with quiet_llama_log():
            self.model = llama_cpp.llama_model_load_from_file(str(model_path).encode(), params)
        if not self.model:
            raise ModelError(f"llama.cpp could not read the vocabulary of {model_path}; is it a GGUF file?")
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)

    def __del__(self) -> None:
        if getattr(self, "model", None):
            self._lib.llama_model_free(self.model)
            self.model = None


def load_tokenizer(model_path: Path) -> LlamaCppTokenizer:
    """Only the vocabulary of a GGUF (no weights): a tokenizer for remote scoring."""
    owner = _VocabularyOnly(model_path)
    tokenizer = LlamaCppTokenizer(owner.vocab)
    tokenizer.owner = owner  # the vocabulary lives as long as the model object
    return tokenizer


@contextmanager
def quiet_llama_log() -> Iterator[None]:
    """Silence llama.cpp's own log (it goes through this Python logger) for one call."""
    logger = logging.getLogger("llama-cpp-python")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
