"""Where a piece of text sits in its document: the one span shape every cited thing carries.

A chunk, a stored chunk and a search hit each point into a document's text with a character
span, under a heading path, on a page. `Span` says so once; `document.text[span.start:span.end]`
is the text the span stands for, which is what makes a footnote checkable.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A character span into a document's text, with the headings above it and its page."""

    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    page: int | None = None  # 1-based page number where the format has pages

    def location(self, path: str) -> str:
        """Human-readable place of the span in the document at `path`: path, page and headings."""
        parts = [path]
        if self.page is not None:
            parts.append(f"p. {self.page}")
        if self.heading_path:
            parts.append(" > ".join(self.heading_path))
        return ", ".join(parts)


class Spanned:
    """The span of a record that is built from a span (`span` field) and reads as one: its
    `start`, `end`, `heading_path` and `page` are the span's, so callers need not know."""

    span: Span

    @property
    def start(self) -> int:
        return self.span.start

    @property
    def end(self) -> int:
        return self.span.end

    @property
    def heading_path(self) -> tuple[str, ...]:
        return self.span.heading_path

    @property
    def page(self) -> int | None:
        return self.span.page
