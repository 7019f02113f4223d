"""Scoring in process with llama.cpp: one decode per window, logits only for scored rows.

The generator in `footnote.models.llama` is left alone; this opens its own context. A
window goes through a single `llama_decode` whose batch asks for logits only at the
positions that predict a scored token, and those rows are read in place through a
numpy view of llama.cpp's output buffer (no copy into Python lists, no full-vocab loop).
Windows shorter than llama.cpp's physical batch (512 tokens) are packed several to a
decode, one sequence each, so that short windows still fill the matrix multiplications.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from footnote.errors import ModelError
from footnote.models.llama import open_llama, quiet_llama_log
from footnote.models.scoring import Tokenizer, TokenScorer
from footnote.perplexity.errors import ScoringOptionError
from footnote.perplexity.logits import target_logprobs, top_logprobs


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
        per_batch = windows_per_decode(context_length)
        # flash attention: on CPU about 1.4x the batch throughput of the unfused attention
        self._llm: Any = open_llama(
            model_path,
            n_ctx=context_length,
            threads=threads,
            n_batch=context_length,
            n_ubatch=min(context_length, PHYSICAL_BATCH),
            logits_all=False,
        )
        self._ctx: Any = self._llm._ctx.ctx
        self._own_ctx: Any = None
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
        if per_batch > 1:
            self._own_ctx = _multi_sequence_context(self._llm, per_batch, context_length * per_batch)
            self._ctx = self._own_ctx
        self.windows_per_batch = per_batch
        self.tokenizer = LlamaCppTokenizer(self._llm._model.vocab)
        self._n_vocab = int(self._llm.n_vocab())
        self._batch = _Batch(context_length * per_batch)

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        logits = self._decode(token_ids, first_scored)
        return target_logprobs(logits, np.asarray(token_ids[first_scored:], dtype=np.intc))

    def score_windows(self, windows: Sequence[tuple[Sequence[int], int]]) -> list[list[float]]:
        """Up to `windows_per_batch` windows in one decode, each its own sequence."""
        if len(windows) == 1:
            return [self.score_window(*windows[0])]
        if len(windows) > self.windows_per_batch:
            raise ValueError(f"{len(windows)} windows in one decode; at most {self.windows_per_batch}")
        for token_ids, first_scored in windows:
            self._check_window(token_ids, first_scored)
        rows = self._batch.load_many([(ids, first - 1, len(ids) - 1) for ids, first in windows])
        logits = self._run_batch(rows, sum(len(ids) for ids, _ in windows))
        targets = np.concatenate([np.asarray(ids[first:], dtype=np.intc) for ids, first in windows])
        values = target_logprobs(logits, targets)
        bounds = np.cumsum([0, *(len(ids) - first for ids, first in windows)]).tolist()
        return [values[start:end] for start, end in itertools.pairwise(bounds)]

    def score_window_top(
        self, token_ids: Sequence[int], first_scored: int, n: int
    ) -> tuple[list[float], list[list[tuple[int, float]]]]:
        """As `score_window`, plus the `n` likeliest tokens at each scored position (for echo APIs)."""
        logits = self._decode(token_ids, first_scored)
        return top_logprobs(logits, np.asarray(token_ids[first_scored:], dtype=np.intc), n)

    def _decode(self, token_ids: Sequence[int], first_scored: int) -> npt.NDArray[np.float32]:
        """One llama_decode of the window; a view of the logits rows that predict scored tokens."""
        n = len(token_ids)
        self._check_window(token_ids, first_scored)
        self._batch.load(token_ids, first_scored - 1, n - 1)
        return self._run_batch(n - first_scored, n)

    def _check_window(self, token_ids: Sequence[int], first_scored: int) -> None:
        n = len(token_ids)
        if not 1 <= first_scored < n <= self.context_length:
            raise ValueError(
                f"bad window: {n} tokens, first scored {first_scored}, max {self.context_length}"
            )

    def _run_batch(self, rows: int, tokens: int) -> npt.NDArray[np.float32]:
        """Decode the loaded batch from an empty cache; a view of its `rows` logits rows."""
        import llama_cpp

        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._ctx), True)
        status = llama_cpp.llama_decode(self._ctx, self._batch.batch)
        if status != 0:
            raise ModelError(f"llama.cpp could not evaluate {tokens} tokens (llama_decode {status})")
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits(self._ctx), shape=(rows, self._n_vocab))

    def close(self) -> None:
        import llama_cpp

        batch = getattr(self, "_batch", None)
        if batch is not None:
            batch.free()
        if getattr(self, "_own_ctx", None) is not None:
            llama_cpp.llama_free(self._own_ctx)
            self._own_ctx = None
        llm = getattr(self, "_llm", None)
        if llm is not None:
            llm.close()


PHYSICAL_BATCH = 512  # llama.cpp's default n_ubatch: the rows one forward pass multiplies at once


def windows_per_decode(context_length: int) -> int:
    """How many windows of `context_length` tokens share one decode: as many as fill a physical batch."""
    return max(1, min(PHYSICAL_BATCH // max(context_length, 1), _max_sequences()))


def _max_sequences() -> int:
    import llama_cpp

    return int(llama_cpp.llama_max_parallel_sequences())


def _multi_sequence_context(llm: Any, sequences: int, tokens: int) -> Any:
    """A second context on `llm`'s model, like its own but holding `sequences` sequences of
    `tokens` in all in one physical batch (llama-cpp-python's `Llama` always opens a
    single-sequence context). Each sequence gets a cache of its own: with one unified cache,
    llama.cpp's CPU flash attention gave some windows other log-probabilities than alone."""
    import llama_cpp

    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_batch = params.n_ubatch = tokens
    # llama.cpp gives each sequence's cache a multiple of 256 cells; asking for that says nothing
    params.n_ctx = sequences * -(-tokens // sequences // 256) * 256
    params.n_seq_max = sequences
    params.kv_unified = False
    with quiet_llama_log():
        ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
    if not ctx:
        raise ModelError(f"llama.cpp could not open a context for {sequences} windows at once")
    return ctx


class _Batch:
    """A llama_batch of one or more sequences, written through numpy views of its arrays."""

    def __init__(self, capacity: int) -> None:
        import llama_cpp

        self.batch: Any = llama_cpp.llama_batch_init(capacity, 0, 1)
        self._tokens = np.ctypeslib.as_array(self.batch.token, shape=(capacity,))
        self._positions = np.ctypeslib.as_array(self.batch.pos, shape=(capacity,))
        self._wants_logits = np.ctypeslib.as_array(self.batch.logits, shape=(capacity,))
        np.ctypeslib.as_array(self.batch.n_seq_id, shape=(capacity,))[:] = 1
        self._sequence = [0] * capacity
        for i in range(capacity):
            self.batch.seq_id[i][0] = 0
        self._positions[:] = np.arange(capacity)

    def load(self, token_ids: Sequence[int], first_output: int, end_output: int) -> None:
        """Tokens at positions 0..n-1, with logits for rows first_output..end_output-1."""
        self.load_many([(token_ids, first_output, end_output)])

    def load_many(self, windows: Sequence[tuple[Sequence[int], int, int]]) -> int:
        """Window i as sequence i at positions 0..n_i-1, with logits for its rows
        first_output..end_output-1; returns how many rows have logits."""
        at = 0
        for sequence, (token_ids, first_output, end_output) in enumerate(windows):
            n = len(token_ids)
            self._tokens[at : at + n] = token_ids
            self._positions[at : at + n] = np.arange(n)
            self._wants_logits[at : at + n] = 0
            self._wants_logits[at + first_output : at + end_output] = 1
            for i in range(at, at + n):
                if self._sequence[i] != sequence:
                    self.batch.seq_id[i][0] = self._sequence[i] = sequence
            at += n
        self.batch.n_tokens = at
        return int(self._wants_logits[:at].sum())

    def wanted_rows(self) -> list[int]:
        """Batch rows whose logits the next decode returns."""
        return np.flatnonzero(self._wants_logits[: self.batch.n_tokens]).tolist()

    def sequences(self) -> list[tuple[int, int]]:
        """(sequence, position) of every token in the batch."""
        return [(self._sequence[i], int(self._positions[i])) for i in range(self.batch.n_tokens)]

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
