"""What loaders produce and the chunker consumes.

A `Document` holds the text footnote cites from (`text`) and the structure found
in it as `Block`s. Every block's `start`/`end` is a character span into
`Document.text`, so `document.text[block.start:block.end] == block.text` always
holds; chunks keep the same property, which is what makes a footnote checkable.
For plain text and Markdown, `text` is the decoded file itself; for HTML and PDF
it is the extracted text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from footnote.core.span import Span, Spanned


@dataclass(frozen=True)
class Block:
    """A run of text with one structural role: a paragraph, heading, list, table or code."""

    text: str
    start: int
    end: int
    kind: str = "paragraph"  # paragraph | heading | code | table | list
    heading_path: tuple[str, ...] = ()
    page: int | None = None  # 1-based page number where the format has pages


@dataclass
class Document:
    """One source file turned into citable text plus structure."""

    path: str
    format: str  # the loader's name for it, one of `footnote.core.formats.document_formats()`
    title: str
    text: str
    blocks: list[Block] = field(default_factory=list)
    url: str | None = None  # canonical URL when the source names one

    def check_spans(self) -> None:
        """Raise AssertionError if any block's span does not reproduce its text."""
        for block in self.blocks:
            if self.text[block.start : block.end] != block.text:
                raise AssertionError(f"block span {block.start}:{block.end} does not match its text")


@dataclass(frozen=True)
class Chunk(Spanned):
    """A token-bounded piece of a document: the unit that is indexed and cited.

    `text == document.text[span.start:span.end]`; `start`, `end`, `heading_path` and `page`
    read the span's."""

    ordinal: int
    text: str
    span: Span
    token_count: int = 0

    def embedding_text(self, title: str) -> str:
        """The text given to the embedder: title and heading path give a chunk its context."""
        return embedding_text(self.text, self.heading_path, title)


def embedding_text(text: str, heading_path: tuple[str, ...], title: str) -> str:
    """A chunk's text as the embedder sees it, under its document's title and its headings."""
    # A title the chunk already starts with (a text file's first line) is not repeated.
    # Nor is a top heading that repeats the title (a Markdown file's "# Title").
    shown = "" if title and text.startswith(title) else title
    headings = heading_path[1:] if heading_path[:1] == (title,) else heading_path
    context = " > ".join(part for part in (shown, *headings) if part)
    return f"{context}\n{text}" if context else text
