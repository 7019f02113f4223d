"""Scoring a text: tokens in, windows through a scorer, statistics and per-token detail out."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from footnote.models.scoring import Tokenizer, TokenScorer
from footnote.perplexity.errors import ScoringOptionError, TextInputError
from footnote.perplexity.stats import PerplexityResult, ProtocolInfo, RunningNLL
from footnote.perplexity.text import TokenTexts, iter_token_ids
from footnote.perplexity.windows import Window, chunk_windows, sliding_windows

ProtocolName = Literal["hf", "llama.cpp"]
PROTOCOLS: tuple[ProtocolName, ...] = ("hf", "llama.cpp")
DEFAULT_CONTEXT = 512


@dataclass(frozen=True)
class ScoringOptions:
    protocol: ProtocolName = "hf"
    context_length: int | None = None  # None: 512, or the scorer's own limit if lower
    stride: int | None = None  # hf only; None means no overlap (stride = context length)
    max_tokens: int | None = None  # score only the first N tokens of the text

    def checked(self, scorer: TokenScorer) -> ScoringOptions:
        """These options with the stride filled in; raises ScoringOptionError on unusable values."""
        if self.protocol not in PROTOCOLS:
            raise ScoringOptionError(f"unknown protocol '{self.protocol}'; use hf or llama.cpp")
        context = self.context_length or min(DEFAULT_CONTEXT, scorer.context_length)
        if context < 2:
            raise ScoringOptionError(f"context length {context} is too small; use 2 or more")
        if context > scorer.context_length:
            raise ScoringOptionError(
                f"context length {context} is above the {scorer.context_length} tokens "
                f"{scorer.name} can take; use --context-length {scorer.context_length} or less"
            )
        if self.protocol == "llama.cpp" and self.stride not in (None, context):
            raise ScoringOptionError("--stride is for --protocol hf; llama.cpp chunks never overlap")
        stride = context if self.stride is None or self.protocol == "llama.cpp" else self.stride
        if not 1 <= stride <= context:
            raise ScoringOptionError(f"stride {stride} must be between 1 and the context length ({context})")
        if self.max_tokens is not None and self.max_tokens < 2:
            raise ScoringOptionError(f"max tokens {self.max_tokens} leaves nothing to score; use 2 or more")
        return replace(self, context_length=context, stride=stride)


@dataclass(frozen=True)
class TokenScore:
    index: int  # position in the text's token stream (BOS, if any, is 0)
    token_id: int
    text: str  # the characters this token completes; all texts joined give the input back
    offset: int  # character offset of `text` in the input
    logprob: float  # natural log


@dataclass(frozen=True)
class ScoringProgress:
    tokens_read: int
    tokens_scored: int
    windows: int


TokenSink = Callable[[TokenScore], None]
ProgressSink = Callable[[ScoringProgress], None]


class _Counter:
    """Counts what passes through an iterator."""

    def __init__(self) -> None:
        self.count = 0
        self.chars = 0

    def tokens(self, source: Iterator[int]) -> Iterator[int]:
        for item in source:
            self.count += 1
            yield item

    def text(self, source: Iterable[str]) -> Iterator[str]:
        for piece in source:
            self.chars += len(piece)
            yield piece


class _TokenDetail:
    """Feeds every token to a TokenTexts tracker once, in order, and emits the scored ones."""

    def __init__(self, tokenizer: Tokenizer, sink: TokenSink) -> None:
        self._texts = TokenTexts(tokenizer)
        self._next = 0
        self._sink = sink

    def emit(self, window: Window, logprobs: list[float]) -> None:
        scored_from = window.start + window.first_scored
        for position, token in enumerate(window.tokens):
            index = window.start + position
            if index < self._next:
                continue
            text, offset = self._texts.next(token)
            self._next = index + 1
            if index >= scored_from:
                self._sink(TokenScore(index, token, text, offset, logprobs[index - scored_from]))


def _batched(windows: Iterator[Window], size: int) -> Iterator[list[Window]]:
    """Consecutive groups of up to `size` windows, pulled lazily (itertools.batched is 3.12+)."""
    while group := list(itertools.islice(windows, size)):
        yield group


def _windows(scorer: TokenScorer, tokens: Iterator[int], options: ScoringOptions) -> Iterator[Window]:
    assert options.stride is not None and options.context_length is not None
    if options.protocol == "llama.cpp":
        tokenizer = scorer.tokenizer
        bos = tokenizer.bos_id if tokenizer.add_bos else None
        return chunk_windows(tokens, options.context_length, bos)
    return sliding_windows(tokens, options.context_length, options.stride)


def _check_enough(source: str, text: _Counter, tokens: _Counter, options: ScoringOptions) -> None:
    if text.chars == 0:
        raise TextInputError(f"{source} is empty: there is no text to score")
    if tokens.count < 2:
        raise TextInputError(
            f"{source} is {tokens.count} token long; perplexity needs at least two tokens "
            "(one to predict from and one to predict)"
        )
    assert options.context_length is not None
    if options.protocol == "llama.cpp" and tokens.count < options.context_length:
        raise TextInputError(
            f"{source} has {tokens.count} tokens, fewer than one chunk of {options.context_length}; "
            "--protocol llama.cpp scores whole chunks only: lower --context-length or use --protocol hf"
        )


def score_text(
    scorer: TokenScorer,
    pieces: Iterable[str],
    options: ScoringOptions | None = None,
    on_token: TokenSink | None = None,
    on_progress: ProgressSink | None = None,
    source: str = "text",
) -> PerplexityResult:
    """Perplexity of the text made of `pieces` (read lazily) under `scorer`."""
    options = (options or ScoringOptions()).checked(scorer)
    started = time.perf_counter()
    text, tokens = _Counter(), _Counter()
    stream: Iterator[int] = iter_token_ids(scorer.tokenizer, text.text(pieces))
    if options.max_tokens is not None:
        stream = itertools.islice(stream, options.max_tokens)
    detail = _TokenDetail(scorer.tokenizer, on_token) if on_token else None
    nll = RunningNLL()
    windows = 0
    scored = (w for w in _windows(scorer, tokens.tokens(stream), options) if w.scored_count)
    for group in _batched(scored, max(1, scorer.windows_per_batch)):
        results = scorer.score_windows([(window.inputs, window.first_scored) for window in group])
        for window, logprobs in zip(group, results, strict=True):
            if len(logprobs) != window.scored_count:
                raise RuntimeError(f"{scorer.name} returned {len(logprobs)} scores for {window.scored_count}")
            nll.add(logprobs)
            windows += 1
            if detail:
                detail.emit(window, logprobs)
        if on_progress:
            on_progress(ScoringProgress(tokens.count, nll.count, windows))
    _check_enough(source, text, tokens, options)
    return _result(scorer, options, nll, tokens.count, windows, time.perf_counter() - started)


def _result(
    scorer: TokenScorer,
    options: ScoringOptions,
    nll: RunningNLL,
    tokens_read: int,
    windows: int,
    seconds: float,
) -> PerplexityResult:
    assert options.stride is not None and options.context_length is not None
    tokenizer = scorer.tokenizer
    protocol = ProtocolInfo(
        name=options.protocol,
        context_length=options.context_length,
        stride=options.stride,
        bos=bool(tokenizer.add_bos and tokenizer.bos_id is not None),
        max_tokens=options.max_tokens,
    )
    return PerplexityResult(
        model=scorer.name,
        protocol=protocol,
        tokens_read=tokens_read,
        tokens_scored=nll.count,
        windows=windows,
        nll_mean=nll.mean,
        nll_stderr=nll.nll_stderr,
        perplexity=nll.perplexity,
        perplexity_stderr=nll.perplexity_stderr,
        seconds=seconds,
    )
