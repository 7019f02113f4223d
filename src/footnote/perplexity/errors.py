"""Errors of perplexity scoring; all are FootnoteErrors that name the fix."""

from __future__ import annotations

from footnote.errors import FootnoteError, ModelError


class TextInputError(FootnoteError):
    """The text to score is empty, too short, or not UTF-8."""


class ScoringOptionError(FootnoteError):
    """A context length, stride or protocol that cannot be used with this model."""


class RemoteScorerError(ModelError):
    """A remote OpenAI-compatible server did not return prompt log-probabilities."""
