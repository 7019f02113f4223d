"""Perplexity scoring of texts with any backend that exposes log-probabilities.

from footnote.perplexity import ScoringOptions, open_scorer, score_file
with open_scorer("smollm2-135m", settings, context_length=512) as scorer:
    result = score_file(scorer, Path("wiki.test.raw"), ScoringOptions(max_tokens=16384))
print(result.perplexity, result.perplexity_stderr)
"""

from __future__ import annotations

from pathlib import Path

from footnote.models.scoring import Tokenizer, TokenScorer
from footnote.perplexity.errors import RemoteScorerError, ScoringOptionError, TextInputError
from footnote.perplexity.models import open_perplexity_scorer, open_scorer, scorer_opener
from footnote.perplexity.runner import (
    PROTOCOLS,
    ProgressSink,
    ScoringOptions,
    ScoringProgress,
    TokenScore,
    TokenSink,
    score_text,
)
from footnote.perplexity.stats import PerplexityResult, ProtocolInfo
from footnote.perplexity.text import iter_text, iter_text_from_string


def score_file(
    scorer: TokenScorer,
    path: Path,
    options: ScoringOptions | None = None,
    on_token: TokenSink | None = None,
    on_progress: ProgressSink | None = None,
) -> PerplexityResult:
    """Perplexity of a UTF-8 file of any size, read in pieces."""
    with path.open("rb") as stream:
        return score_text(scorer, iter_text(stream, str(path)), options, on_token, on_progress, str(path))


def score_string(
    scorer: TokenScorer,
    text: str,
    options: ScoringOptions | None = None,
    on_token: TokenSink | None = None,
) -> PerplexityResult:
    """Perplexity of a text already in memory."""
    return score_text(scorer, iter_text_from_string(text), options, on_token)


__all__ = [
    "PROTOCOLS",
    "PerplexityResult",
    "ProtocolInfo",
    "RemoteScorerError",
    "ScoringOptionError",
    "ScoringOptions",
    "ScoringProgress",
    "TextInputError",
    "TokenScore",
    "TokenScorer",
    "Tokenizer",
    "iter_text",
    "open_perplexity_scorer",
    "open_scorer",
    "score_file",
    "score_string",
    "score_text",
    "scorer_opener",
]
