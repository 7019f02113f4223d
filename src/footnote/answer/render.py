"""Checked sentences as Markdown: each supported sentence with its footnotes before its final
punctuation, unsupported ones left unmarked."""

from __future__ import annotations

from collections.abc import Sequence

from footnote.answer.citations import AnswerSentence
from footnote.core.cjk import has_cjk
from footnote.core.sentences import is_line_item

_SENTENCE_ENDS = ".!?\u3002\uff01\uff1f"


class MarkdownRenderer:
    """Renders checked sentences one at a time; the pieces concatenate to `render_markdown`.

    Streaming clients append each returned piece as its sentence is checked, then the `rest`
    of the finished answer's text, so what they show equals the final answer.
    """

    def __init__(self) -> None:
        self._previous = ""
        self.shown = ""  # the pieces returned so far, joined

    def add(self, sentence: AnswerSentence) -> str:
        """The text to append for `sentence`: a separator, then the sentence with its footnotes."""
        body = _with_footnotes(sentence) if sentence.supported and sentence.citations else sentence.text
        if not body:
            return ""
        separator = _separator(self._previous, body) if self._previous else ""
        self._previous = body
        piece = separator + body
        self.shown += piece
        return piece

    def rest(self, text: str) -> str | None:
        """What is left to append of the finished answer's `text`: all of it when no sentence
        was streamed (a declined or withheld answer), nothing when every one was; None when the
        pieces shown are not how `text` begins."""
        if not text.startswith(self.shown):
            return None
        return text[len(self.shown) :]


def render_markdown(sentences: Sequence[AnswerSentence]) -> str:
    """The answer with checked footnotes placed before each supported sentence's final punctuation.

    Unsupported sentences are left unmarked. List items and headings start on their own line;
    CJK sentences are joined without a space.
    """
    renderer = MarkdownRenderer()
    return "".join(renderer.add(sentence) for sentence in sentences)


def _with_footnotes(sentence: AnswerSentence) -> str:
    numbers = list(dict.fromkeys(citation.number for citation in sentence.citations))
    marks = "".join(f"[{number}]" for number in numbers)
    text = sentence.text
    cut = len(text.rstrip(_SENTENCE_ENDS))
    glue = "" if cut == 0 or has_cjk(text[cut - 1]) else " "
    return f"{text[:cut]}{glue}{marks}{text[cut:]}"


def _separator(previous: str, following: str) -> str:
    if is_line_item(previous) or is_line_item(following):
        return "\n"
    if has_cjk(following[0]) and previous[-1] in "\u3002\uff01\uff1f]":
        return ""
    return " "
