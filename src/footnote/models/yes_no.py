"""Yes/no questions to an LLM about two texts, scored by the token it would answer with.

The LLM reranker (does this passage help answer the query?) and the LLM support judge (does
this premise show that the claim is true?) ask the same kind of question: a prompt with two
texts in it, ending in "Answer:", scored at the position of " Yes". `YesNoScorer` does it once
for both; each says only its prompt, how it cuts the texts to fit, and which score it takes.
"""

from __future__ import annotations

import math
import string
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from footnote.errors import ModelError

if TYPE_CHECKING:
    from footnote.models.scoring import TokenScorer

# How many of the likeliest tokens are read at the answer position to find " No" among them.
LIKELY_TOKENS = 64


class YesNoScorer:
    """A two-slot prompt (`template`, e.g. "Premise: {premise}\\nClaim: {claim}\\n...Answer:"),
    tokenized once, asked of a token scorer with the two slots filled by token ids."""

    def __init__(self, scorer: TokenScorer, template: str, instead: str, weighs_no: bool = False) -> None:
        self.scorer = scorer
        tokenizer = scorer.tokenizer
        yes, no = tokenizer.tokenize(" Yes"), tokenizer.tokenize(" No")
        if not yes or (weighs_no and not no):
            wanted = "tokens for ' Yes' and ' No'" if weighs_no else "token for ' Yes'"
            raise ModelError(f"{scorer.name} has no {wanted}; use {instead} instead")
        self._yes, self._no = yes[0], (no[0] if no else None)
        self._bos = [tokenizer.bos_id] if tokenizer.add_bos and tokenizer.bos_id is not None else []
        head, middle, end = _pieces(template)
        self._head, self._middle, self._end = (tokenizer.tokenize(part) for part in (head, middle, end))
        self._lock = threading.Lock()  # one llama.cpp context: one window at a time

    @property
    def name(self) -> str:
        return self.scorer.name

    @property
    def context_length(self) -> int:
        return self.scorer.context_length

    @property
    def prompt_tokens(self) -> int:
        """Tokens of a window besides the two texts: BOS, the prompt's own words and " Yes"."""
        return len(self._bos) + len(self._head) + len(self._middle) + len(self._end) + 1

    def tokenize(self, text: str) -> list[int]:
        return self.scorer.tokenizer.tokenize(text)

    def window(self, first: Sequence[int], second: Sequence[int]) -> list[int]:
        """The prompt with both slots filled, ending in the " Yes" it scores."""
        return [*self._bos, *self._head, *first, *self._middle, *second, *self._end, self._yes]

    def log_yes(self, first: Sequence[int], second: Sequence[int]) -> float:
        """log P(" Yes") as the answer."""
        window = self.window(first, second)
        with self._lock:
            return self.scorer.score_window(window, len(window) - 1)[0]

    def yes_over_no(self, first: Sequence[int], second: Sequence[int]) -> float:
        """P(" Yes") / (P(" Yes") + P(" No")) as the answer: the relative preference, which a
        model's overall confidence in either word does not sway."""
        if self._no is None:
            raise ModelError(f"{self.name} has no token for ' No'; build the scorer with weighs_no=True")
        window = self.window(first, second)
        with self._lock:
            chosen, tops = self.scorer.score_window_top(window, len(window) - 1, LIKELY_TOKENS)
        likely = dict(tops[0])
        # " No" outside the likeliest tokens is at most as likely as the least of them.
        no = likely.get(self._no, min(likely.values(), default=chosen[0]))
        return sigmoid(chosen[0] - no)

    def close(self) -> None:
        self.scorer.close()


def sigmoid(value: float) -> float:
    """1 / (1 + e^-value), without overflow for large negative values."""
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    exponential = math.exp(value)
    return exponential / (1.0 + exponential)


def _pieces(template: str) -> tuple[str, str, str]:
    """The text before, between and after the two slots of `template`."""
    parts = list(string.Formatter().parse(template))
    slots = [field for _, field, _, _ in parts if field is not None]
    if len(slots) != 2:
        raise ValueError(f"a yes/no prompt holds exactly two slots, not {len(slots)}: {template!r}")
    texts = [literal for literal, _, _, _ in parts]
    return texts[0], texts[1], "".join(texts[2:])
