"""The two protocols a scoring backend implements: a tokenizer and a window scorer.

Each has one required method. Perplexity (windows, streaming, statistics) is written once on
top of them in `footnote.perplexity.runner`; the LLM reranker and the LLM support judge score
with them too, which is why they live with the other model protocols.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from types import TracebackType


class Tokenizer(ABC):
    """Turns text into the token ids a model scores. Subclasses implement `tokenize` only."""

    bos_id: int | None = None
    add_bos: bool = False  # whether the model expects a BOS token in front of a text
    vocab_size: int | None = None  # token ids run from 0 to vocab_size - 1, when known

    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` with no special tokens added (BOS is the caller's business)."""

    def piece(self, token_id: int) -> bytes:
        """The UTF-8 bytes `token_id` stands for; empty when unknown or for control tokens."""
        return b""


class TokenScorer(ABC):
    """Log-probabilities of tokens given the tokens before them. Subclasses implement `score_window`."""

    name: str = "scorer"
    context_length: int = 512  # the longest window `score_window` accepts
    windows_per_batch: int = 1  # how many windows `score_windows` evaluates in one pass
    tokenizer: Tokenizer

    @abstractmethod
    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        """Natural-log probabilities of `token_ids[i]` given `token_ids[:i]`.

        One value per i in `range(first_scored, len(token_ids))`, in order; the window is
        evaluated from scratch (no state carries over between calls). `first_scored >= 1`.
        """

    def score_windows(self, windows: Sequence[tuple[Sequence[int], int]]) -> list[list[float]]:
        """`score_window` of each (token_ids, first_scored), in order; at most `windows_per_batch`.

        Backends that can evaluate several windows in one pass override it.
        """
        return [self.score_window(token_ids, first_scored) for token_ids, first_scored in windows]

    def score_window_top(
        self, token_ids: Sequence[int], first_scored: int, n: int
    ) -> tuple[list[float], list[list[tuple[int, float]]]]:
        """As `score_window`, plus up to `n` likely tokens (id, log-probability) per scored position.

        The default knows only the scored token itself; backends that see whole
        distributions return the `n` likeliest.
        """
        chosen = self.score_window(token_ids, first_scored)
        tops = [
            [(int(token), logprob)] for token, logprob in zip(token_ids[first_scored:], chosen, strict=True)
        ]
        return chosen, tops

    def score_tokens(self, token_ids: Sequence[int]) -> list[float]:
        """Every token after the first, in one window."""
        return self.score_window(token_ids, 1)

    def close(self) -> None:  # noqa: B027 - optional hook, most scorers have nothing to release
        """Release the model; the default has nothing to release."""

    def __enter__(self) -> TokenScorer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


# Opens the token scorer of a model spec whose windows hold up to the given number of tokens
# (`footnote.perplexity.scorer_opener` makes one from the settings): handed to the LLM reranker
# and the LLM judge, which sit below perplexity and cannot open one themselves.
ScorerOpener = Callable[[str, int], TokenScorer]
