"""Sentence boundaries and citation markers of answers, defined in `footnote.core.sentences`."""

from footnote.core.sentences import (
    LOOKAHEAD,
    MARKER,
    SentenceAssembler,
    is_line_item,
    split_sentences,
    strip_markers,
)

__all__ = ["LOOKAHEAD", "MARKER", "SentenceAssembler", "is_line_item", "split_sentences", "strip_markers"]
