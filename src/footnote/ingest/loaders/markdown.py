"""Markdown files: headings, fenced code, tables, lists and paragraphs as blocks.

This is a line-based reader of the common Markdown constructs, not a full
CommonMark parser: it only has to find block boundaries and heading titles.
`Document.text` is the decoded file, so every block is a verbatim slice of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from footnote.core.document import Block, Document
from footnote.ingest.loaders import Loader
from footnote.ingest.loaders.text import file_stem, read_bytes, short_title, text_from_bytes, trim_span

_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_THEMATIC_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
# Only these list items can start a list in the middle of a paragraph (as in CommonMark),
# so that a wrapped line starting "1998. Today" stays part of its paragraph.
_LIST_INTERRUPTING_PARAGRAPH = re.compile(r" {0,3}(?:[-*+]|1[.)])[ \t]+\S")
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_INLINE_MARKS = re.compile(r"[*`]")


@dataclass
class _Line:
    start: int
    end: int  # excludes the newline
    text: str

    @property
    def blank(self) -> bool:
        return not self.text.strip()


@dataclass
class _Parser:
    text: str
    lines: list[_Line]
    blocks: list[Block] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    first_h1: str | None = None

    def add(self, first: int, last: int, kind: str = "paragraph") -> None:
        """Add lines `first..last` (inclusive) as one block, trimmed of surrounding whitespace."""
        start, end = trim_span(self.text, self.lines[first].start, self.lines[last].end)
        if start < end:
            path = tuple(title for _, title in self.headings if title)
            self.blocks.append(Block(self.text[start:end], start, end, kind=kind, heading_path=path))

    def add_heading(self, first: int, last: int, level: int, title: str) -> None:
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, title))
        if level == 1 and self.first_h1 is None and title:
            self.first_h1 = title
        self.add(first, last, kind="heading")


def _split_lines(text: str) -> list[_Line]:
    lines = []
    start = 0
    for raw in text.split("\n"):
        lines.append(_Line(start, start + len(raw), raw))
        start += len(raw) + 1
    return lines


def _heading_title(raw: str) -> str:
    """Heading text without closing hashes, link targets or emphasis marks."""
    title = _ATX_CLOSING.sub("", raw.strip())
    title = _LINK.sub(r"\1", title)
    return " ".join(_INLINE_MARKS.sub("", title).split())


def _front_matter_end(lines: list[_Line]) -> int:
    """Index of the first line after YAML front matter, or 0 when there is none."""
    if not lines or lines[0].text.rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].text.rstrip() in ("---", "..."):
            return index + 1
    return 0


def _fence_end(lines: list[_Line], index: int, fence: str) -> int:
    """Index of the line closing the fence opened at `index`, or the last line if unclosed."""
    closing = re.compile(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    for later in range(index + 1, len(lines)):
        if closing.match(lines[later].text):
            return later
    return len(lines) - 1


def _starts_block(line: _Line) -> bool:
    """Whether `line` interrupts a paragraph instead of continuing it."""
    return bool(
        _ATX_HEADING.match(line.text)
        or _FENCE.match(line.text)
        or _THEMATIC_BREAK.match(line.text)
        or line.text.lstrip().startswith("|")
    )


def _list_end(lines: list[_Line], index: int) -> int:
    """Last line of the list starting at `index`; items may be separated by single blank lines."""
    last = index
    cursor = index + 1
    while cursor < len(lines):
        line = lines[cursor]
        if line.blank:
            following = lines[cursor + 1] if cursor + 1 < len(lines) else None
            if following is None or not (_LIST_ITEM.match(following.text) or following.text.startswith("  ")):
                break
        elif _starts_block(line) and not line.text.startswith("  "):
            break
        else:
            last = cursor
        cursor += 1
    return last


def _read_paragraph(parser: _Parser, index: int) -> int:
    """Add the paragraph (or setext heading) starting at `index`; return the next line index."""
    lines = parser.lines
    last = index
    while last + 1 < len(lines):
        following = lines[last + 1]
        underline = _SETEXT_UNDERLINE.match(following.text)
        if underline:
            level = 1 if underline.group(1).startswith("=") else 2
            title = _heading_title(" ".join(line.text for line in lines[index : last + 1]))
            parser.add_heading(index, last + 1, level, title)
            return last + 2
        if following.blank or _starts_block(following) or _LIST_INTERRUPTING_PARAGRAPH.match(following.text):
            break
        last += 1
    parser.add(index, last)
    return last + 1


def _read_block(parser: _Parser, index: int) -> int:
    """Add the block that starts at line `index`; return the index of the line after it."""
    lines = parser.lines
    line = lines[index]
    if line.blank or _THEMATIC_BREAK.match(line.text):
        return index + 1
    fence = _FENCE.match(line.text)
    if fence:
        last = _fence_end(lines, index, fence.group(1))
        parser.add(index, last, kind="code")
        return last + 1
    heading = _ATX_HEADING.match(line.text)
    if heading:
        parser.add_heading(index, index, len(heading.group(1)), _heading_title(heading.group(2) or ""))
        return index + 1
    if line.text.lstrip().startswith("|"):
        last = index
        while last + 1 < len(lines) and lines[last + 1].text.lstrip().startswith("|"):
            last += 1
        parser.add(index, last, kind="table")
        return last + 1
    if _LIST_ITEM.match(line.text):
        last = _list_end(lines, index)
        parser.add(index, last, kind="list")
        return last + 1
    return _read_paragraph(parser, index)


def _front_matter_title(parser: _Parser, end: int) -> str | None:
    if end == 0:
        return None
    header = parser.text[parser.lines[0].end : parser.lines[end - 1].start]
    match = _FRONT_MATTER_TITLE.search(header)
    if match is None:
        return None
    return short_title(match.group(1).strip("'\"")) or None


class MarkdownLoader(Loader):
    """Markdown (.md, .markdown): blocks carry the heading path they sit under."""

    suffixes = (".md", ".markdown")
    format = "markdown"
    listed_order = 10

    def load(self, path: Path) -> Document:
        return self.load_bytes(path, read_bytes(path))

    def load_bytes(self, path: Path, data: bytes) -> Document:
        """Load Markdown already read (or decompressed) from `path`."""
        text = text_from_bytes(path, data)
        parser = _Parser(text=text, lines=_split_lines(text))
        front_matter_end = _front_matter_end(parser.lines)
        index = front_matter_end
        while index < len(parser.lines):
            index = _read_block(parser, index)
        title = parser.first_h1 or _front_matter_title(parser, front_matter_end) or file_stem(path)
        return Document(
            path=str(path),
            format=self.format,
            title=short_title(title),
            text=text,
            blocks=parser.blocks,
        )
