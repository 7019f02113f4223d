"""Windowing maths, statistics and bad input, with fake tokenizers and scorers (real subclasses)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from footnote.errors import FootnoteError
from footnote.perplexity import (
    ScoringOptionError,
    ScoringOptions,
    TextInputError,
    Tokenizer,
    TokenScore,
    TokenScorer,
    score_string,
)
from footnote.perplexity.stats import RunningNLL
from footnote.perplexity.windows import Window, chunk_windows, sliding_windows


class CharTokenizer(Tokenizer):
    """One token per character; the id is the code point. BOS is id 0 when enabled."""

    def __init__(self, add_bos: bool = False) -> None:
        self.bos_id = 0
        self.add_bos = add_bos

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def piece(self, token_id: int) -> bytes:
        return b"" if token_id == 0 else chr(token_id).encode("utf-8")


def fake_logprob(token_id: int) -> float:
    """What the fake model assigns to a token, whatever its context: -1, -2 or -3 nats."""
    return -1.0 - token_id % 3


class RecordingScorer(TokenScorer):
    """Scores every token with `fake_logprob` and records the windows it was given."""

    def __init__(self, tokenizer: Tokenizer | None = None, context_length: int = 64) -> None:
        self.tokenizer = tokenizer or CharTokenizer()
        self.context_length = context_length
        self.name = "fake"
        self.calls: list[tuple[list[int], int]] = []

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        assert 1 <= first_scored < len(token_ids) <= self.context_length
        self.calls.append((list(token_ids), first_scored))
        return [fake_logprob(t) for t in token_ids[first_scored:]]


def digits(n: int) -> str:
    """n one-character tokens whose ids are 48+i (so windows are easy to read back)."""
    return "".join(chr(48 + i) for i in range(n))


def windows_of(n: int, context: int, stride: int) -> list[tuple[int, int, int]]:
    """(start, end, first scored) of each HF window over n tokens."""
    return [
        (w.start, w.start + len(w.tokens), w.first_scored)
        for w in sliding_windows(iter(range(n)), context, stride)
    ]


def test_sliding_windows_match_the_hugging_face_loop_by_hand() -> None:
    # HF loop: begin 0,2,4,6; end 4,6,8,10; trg_len 4,2,2,2 -> scored 1-3, 4-5, 6-7, 8-9.
    assert windows_of(10, 4, 2) == [(0, 4, 1), (2, 6, 2), (4, 8, 2), (6, 10, 2)]
    # A short last window scores only its new token: begin 6, end 9, trg_len 1.
    assert windows_of(9, 4, 2) == [(0, 4, 1), (2, 6, 2), (4, 8, 2), (6, 9, 2)]
    # No overlap: each window's first token has no context and is not scored.
    assert windows_of(10, 4, 4) == [(0, 4, 1), (4, 8, 1), (8, 10, 1)]
    assert windows_of(5, 8, 8) == [(0, 5, 1)]
    assert windows_of(4, 4, 1) == [(0, 4, 1)]


@pytest.mark.parametrize(
    ("n", "context", "stride"), [(37, 8, 3), (64, 16, 5), (40, 8, 8), (9, 9, 1), (50, 7, 6)]
)
def test_sliding_windows_score_each_token_once_with_the_preceding_context(
    n: int, context: int, stride: int
) -> None:
    scored: list[int] = []
    for window in sliding_windows(iter(range(n)), context, stride):
        assert window.tokens == list(range(window.start, window.start + len(window.tokens)))
        assert len(window.tokens) <= context
        scored.extend(range(window.start + window.first_scored, window.start + len(window.tokens)))
    assert scored == sorted(set(scored))
    lost_to_no_context = (n - 1) // stride if stride == context else 0
    assert len(scored) == n - 1 - lost_to_no_context


def test_chunk_windows_score_the_second_half_and_put_bos_first() -> None:
    windows = list(chunk_windows(iter(range(100, 121)), n_ctx=8, bos_id=1))
    assert [(w.start, w.first_scored, w.scored_count) for w in windows] == [(0, 5, 3), (8, 5, 3)]
    assert windows[1].tokens == list(range(108, 116))
    assert windows[1].inputs == [1, *range(109, 116)]
    assert Window(0, [5, 6], 1).inputs == [5, 6]


def test_runner_feeds_the_scorer_hand_computed_windows() -> None:
    scorer = RecordingScorer()
    result = score_string(scorer, digits(10), ScoringOptions(context_length=4, stride=2))
    assert scorer.calls == [
        ([48, 49, 50, 51], 1),
        ([50, 51, 52, 53], 2),
        ([52, 53, 54, 55], 2),
        ([54, 55, 56, 57], 2),
    ]
    assert (result.tokens_read, result.tokens_scored, result.windows) == (10, 9, 4)
    expected = [-fake_logprob(48 + i) for i in range(1, 10)]
    assert result.nll_mean == pytest.approx(sum(expected) / 9)
    assert result.perplexity == pytest.approx(math.exp(sum(expected) / 9))
    assert result.protocol.stride == 2 and result.protocol.name == "hf"


def test_llama_cpp_protocol_drops_the_remainder_and_replaces_the_first_token_by_bos() -> None:
    scorer = RecordingScorer(CharTokenizer(add_bos=True))
    result = score_string(scorer, digits(20), ScoringOptions(protocol="llama.cpp", context_length=8))
    # The stream is BOS + 20 tokens = 21: two chunks of 8, 5 tokens dropped.
    assert scorer.calls == [([0, 48, 49, 50, 51, 52, 53, 54], 5), ([0, 56, 57, 58, 59, 60, 61, 62], 5)]
    assert (result.tokens_read, result.tokens_scored, result.windows) == (21, 6, 2)
    assert result.protocol.bos and result.protocol.stride == 8


def test_running_nll_gives_the_llama_perplexity_standard_error() -> None:
    values = [0.5, 1.5, 2.0, 4.0, 3.5]
    stats = RunningNLL()
    stats.add([-v for v in values[:2]])
    stats.add([-v for v in values[2:]])
    n = len(values)
    mean = sum(values) / n
    mean_sq = sum(v * v for v in values) / n
    # llama-perplexity: sqrt((E[x^2] - E[x]^2) / (N - 1)), then times PPL.
    stderr = math.sqrt((mean_sq - mean * mean) / (n - 1))
    assert stats.count == n
    assert stats.mean == pytest.approx(mean)
    assert stats.nll_stderr == pytest.approx(stderr)
    assert stats.perplexity == pytest.approx(math.exp(mean))
    assert stats.perplexity_stderr == pytest.approx(math.exp(mean) * stderr)
    single = RunningNLL()
    single.add([-1.0])
    assert single.nll_stderr is None and single.perplexity_stderr is None


def test_per_token_detail_has_text_offset_and_logprob_of_each_scored_token() -> None:
    seen: list[TokenScore] = []
    text = "ab\u00e9c d"
    score_string(RecordingScorer(), text, ScoringOptions(context_length=3), on_token=seen.append)
    # Windows [a b é] [c ␠ d]: the first token of each window is not scored.
    assert [(s.index, s.text, s.offset) for s in seen] == [(1, "b", 1), (2, "é", 2), (4, " ", 4), (5, "d", 5)]
    assert all(s.logprob == fake_logprob(s.token_id) for s in seen)


def test_max_tokens_scores_only_the_first_n_tokens() -> None:
    scorer = RecordingScorer()
    result = score_string(scorer, digits(50), ScoringOptions(context_length=8, max_tokens=12))
    assert (result.tokens_read, result.tokens_scored) == (12, 10)
    assert scorer.calls[-1][0][-1] == 48 + 11


def test_empty_text_is_a_clear_error() -> None:
    with pytest.raises(TextInputError, match="empty: there is no text to score"):
        score_string(RecordingScorer(), "")


def test_a_single_token_is_not_enough() -> None:
    with pytest.raises(TextInputError, match="1 token long; perplexity needs at least two tokens"):
        score_string(RecordingScorer(), "x")
    # BOS plus one token is two tokens: the one token is scored after BOS.
    result = score_string(RecordingScorer(CharTokenizer(add_bos=True)), "x")
    assert result.tokens_scored == 1 and result.perplexity_stderr is None


def test_context_length_above_the_models_names_the_limit() -> None:
    with pytest.raises(ScoringOptionError, match="context length 128 is above the 64 tokens fake can take"):
        score_string(RecordingScorer(context_length=64), digits(10), ScoringOptions(context_length=128))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ScoringOptions(context_length=8, stride=9), "stride 9 must be between 1 and the context length"),
        (ScoringOptions(context_length=8, stride=0), "stride 0 must be between 1"),
        (ScoringOptions(context_length=1), "context length 1 is too small"),
        (ScoringOptions(max_tokens=1), "max tokens 1 leaves nothing to score"),
        (ScoringOptions(protocol="bogus"), "unknown protocol 'bogus'"),  # type: ignore[arg-type]
        (ScoringOptions(protocol="llama.cpp", context_length=32), "fewer than one chunk of 32"),
        (ScoringOptions(protocol="llama.cpp", context_length=8, stride=4), "--stride is for --protocol hf"),
    ],
)
def test_unusable_options_are_clear_errors(options: ScoringOptions, message: str) -> None:
    with pytest.raises(FootnoteError, match=message):
        score_string(RecordingScorer(), digits(20), options)


def test_top_logprobs_are_the_likeliest_tokens_with_normalised_logprobs() -> None:
    import numpy as np

    from footnote.perplexity.logits import target_logprobs, top_logprobs

    logits = np.array([[0.0, 2.0, 1.0, -1.0], [3.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    targets = np.array([2, 1], dtype=np.intc)
    chosen, tops = top_logprobs(logits, targets, 2)
    expected = logits.astype(np.float64) - np.log(
        np.exp(logits.astype(np.float64)).sum(axis=1, keepdims=True)
    )
    assert chosen == pytest.approx([expected[0, 2], expected[1, 1]])
    assert chosen == pytest.approx(target_logprobs(logits, targets))
    assert [i for i, _ in tops[0]] == [1, 2] and tops[1][0][0] == 0  # the tie for second place is any
    assert tops[0][0][1] == pytest.approx(expected[0, 1])
