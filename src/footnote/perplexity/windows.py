"""Cutting a token stream into the windows a scorer evaluates, without knowing its length.

Two protocols:

- `hf`: the Hugging Face sliding window. Window k starts at k * stride and holds up to
  `context_length` tokens; it scores only the tokens not scored by an earlier window,
  each with every preceding token of the window as context. With stride equal to the
  context length the windows do not overlap and the first token of each has no context,
  so it is not scored (exactly as in the transformers documentation's loop).
- `llama.cpp`: llama-perplexity's chunks. The text is cut into chunks of exactly n_ctx
  tokens (a shorter remainder is dropped); the first token of each chunk is replaced by
  BOS when the model adds one, and only tokens n_ctx/2 + 1 .. n_ctx - 1 of a chunk are
  scored, so every scored token sees at least n_ctx/2 tokens of context.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    start: int  # index of tokens[0] in the whole token stream
    tokens: list[int]  # the text's own tokens
    first_scored: int  # tokens[first_scored:] are scored
    bos_id: int | None = None  # when set, the model sees it in place of tokens[0]

    @property
    def inputs(self) -> list[int]:
        if self.bos_id is None:
            return self.tokens
        return [self.bos_id, *self.tokens[1:]]

    @property
    def scored_count(self) -> int:
        return max(0, len(self.tokens) - self.first_scored)


def _fill(buffer: list[int], tokens: Iterator[int], size: int) -> None:
    while len(buffer) < size:
        token = next(tokens, None)
        if token is None:
            return
        buffer.append(token)


def sliding_windows(tokens: Iterator[int], context_length: int, stride: int) -> Iterator[Window]:
    """The Hugging Face protocol over a token stream of unknown length."""
    buffer: list[int] = []
    begin = 0
    previous_end = 0
    while True:
        _fill(buffer, tokens, context_length + 1)  # one more than fits, to know whether this is the last
        window = buffer[:context_length]
        if not window:
            return
        yield Window(begin, window, first_scored=max(1, previous_end - begin))
        if len(buffer) <= context_length:
            return
        previous_end = begin + len(window)
        del buffer[:stride]
        begin += stride


def chunk_windows(tokens: Iterator[int], n_ctx: int, bos_id: int | None) -> Iterator[Window]:
    """The llama-perplexity protocol: whole chunks of `n_ctx`, second half scored."""
    start = 0
    while True:
        chunk: list[int] = []
        _fill(chunk, tokens, n_ctx)
        if len(chunk) < n_ctx:
            return
        yield Window(start, chunk, first_scored=n_ctx // 2 + 1, bos_id=bos_id)
        start += n_ctx
