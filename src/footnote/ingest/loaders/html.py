"""HTML pages: the visible text of the main content, one block per paragraph.

`Document.text` is built from the extracted blocks joined by blank lines, so
spans index the extracted text, not the markup. Page chrome (navigation, forms,
scripts) is left out so that it is never indexed or cited.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from footnote.core.document import Block, Document
from footnote.errors import LoaderError
from footnote.ingest.loaders import Loader
from footnote.ingest.loaders.text import EMPTY_PROBLEM, normalize_newlines, read_bytes, short_title

NO_TEXT_PROBLEM = "HTML has no visible text in its body; nothing to index"

_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "nav", "aside", "form", "iframe", "object"}
)
# An <article> often puts its own title in a <header>, so these are chrome only outside the content.
_PAGE_CHROME = frozenset({"header", "footer"})
_CONTENT_ROOTS = frozenset({"main", "article"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_TAGS = frozenset(
    {"p", "div", "li", "ul", "ol", "dl", "dd", "dt", "pre", "section", "blockquote", "br", "hr", "figure"}
    | {"figcaption", "address", "body", "header", "footer", "details", "summary", "caption"}
    | _HEADINGS
    | _CONTENT_ROOTS
)
_VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_TABLE_TAGS = frozenset({"table", "tr", "td", "th"})
_SEPARATOR = "\n\n"
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# Browsers read these labels as windows-1252 (WHATWG Encoding), and so do the pages written for them.
_WINDOWS_1252_LABELS = frozenset({"iso-8859-1", "iso8859-1", "latin-1", "latin1", "us-ascii", "ascii"})


@dataclass
class _RawBlock:
    kind: str
    text: str
    level: int | None  # heading level for headings
    in_content_root: bool


@dataclass
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    depth: int = 1

    def add_text(self, data: str) -> None:
        if not self.rows:
            self.rows.append([])
        if not self.rows[-1]:
            self.rows[-1].append("")
        self.rows[-1][-1] += data

    def text(self) -> str:
        lines = []
        for row in self.rows:
            cells = [" ".join(cell.split()) for cell in row]
            if any(cells):
                lines.append(" | ".join(cells))
        return "\n".join(lines)


class _VisibleTextParser(HTMLParser):
    """Collects visible text as raw blocks, plus the page title and canonical URL."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[_RawBlock] = []
        self.title: str | None = None
        self.canonical: str | None = None
        self._title_parts: list[str] | None = None
        self._skipping: list[str] = []
        self._root_depth = 0
        self._heading_level: int | None = None
        self._pre_depth = 0
        self._list_depth = 0
        self._buffer: list[str] = []
        self._table: _Table | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.title is None and "svg" not in self._skipping:
            self._title_parts = []
        elif tag == "link" and self.canonical is None:
            values = dict(attrs)
            if "canonical" in (values.get("rel") or "").lower().split() and values.get("href"):
                self.canonical = (values["href"] or "").strip()
        if tag == "body" and self._skipping[:1] == ["head"]:
            # Pages often leave </head> out; the body starts the visible text regardless.
            self._skipping.clear()
        if self._skipping or tag in _SKIPPED or (tag in _PAGE_CHROME and not self._root_depth):
            if tag not in _VOID_TAGS:
                self._skipping.append(tag)
            return
        if self._table is not None:
            self._table_start(tag)
        elif tag == "table":
            self._flush()
            self._table = _Table()
        elif tag in _BLOCK_TAGS:
            self._flush()
            self._enter(tag)

    def _enter(self, tag: str) -> None:
        if tag in _CONTENT_ROOTS:
            self._root_depth += 1
        elif tag in _HEADINGS:
            self._heading_level = int(tag[1])
        elif tag == "pre":
            self._pre_depth += 1
        elif tag == "li":
            self._list_depth += 1

    def _table_start(self, tag: str) -> None:
        assert self._table is not None
        if tag == "table":
            self._table.depth += 1
        elif tag == "tr" and self._table.depth == 1:
            self._table.rows.append([])
        elif tag in ("td", "th") and self._table.depth == 1:
            if not self._table.rows:
                self._table.rows.append([])
            self._table.rows[-1].append("")
        elif tag in _BLOCK_TAGS or tag in _TABLE_TAGS:
            self._table.add_text(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title_parts is not None:
            self.title = " ".join("".join(self._title_parts).split()) or None
            self._title_parts = None
        if self._skipping:
            if tag in self._skipping:
                while self._skipping.pop() != tag:
                    pass
            return
        if self._table is not None:
            if tag == "table":
                self._table.depth -= 1
                if self._table.depth == 0:
                    self._finish_table()
            return
        if tag in _BLOCK_TAGS:
            self._flush()
            self._leave(tag)

    def _leave(self, tag: str) -> None:
        if tag in _CONTENT_ROOTS:
            self._root_depth = max(0, self._root_depth - 1)
        elif tag in _HEADINGS:
            self._heading_level = None
        elif tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
        elif tag == "li":
            self._list_depth = max(0, self._list_depth - 1)

    def handle_data(self, data: str) -> None:
        if self._title_parts is not None:
            self._title_parts.append(data)
        if self._skipping:
            return
        if self._table is not None:
            self._table.add_text(data)
        else:
            self._buffer.append(data)

    def close(self) -> None:
        super().close()
        if self._table is not None:
            self._finish_table()
        self._flush()

    def _finish_table(self) -> None:
        assert self._table is not None
        text = self._table.text()
        self._table = None
        if text:
            self.blocks.append(_RawBlock("table", text, None, self._root_depth > 0))

    def _flush(self) -> None:
        raw = "".join(self._buffer)
        self._buffer = []
        if self._pre_depth:
            text = re.sub(r"\A\s*\n", "", raw).rstrip()
            kind = "heading" if self._heading_level else "code"
        else:
            text = " ".join(raw.split())
            kind = "heading" if self._heading_level else "list" if self._list_depth else "paragraph"
        if text:
            self.blocks.append(_RawBlock(kind, text, self._heading_level, self._root_depth > 0))


def _decode_html(data: bytes) -> str:
    """Decode using the BOM or the declared `<meta charset>`, else UTF-8; bad bytes become U+FFFD."""
    if data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        declared = _META_CHARSET.search(data[:4096])
        encoding = declared.group(1).decode("ascii").lower() if declared else "utf-8"
        if encoding in _WINDOWS_1252_LABELS:
            encoding = "cp1252"
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = "utf-8"
    return normalize_newlines(data.decode(encoding, errors="replace"))


def _build_blocks(raw_blocks: list[_RawBlock]) -> tuple[str, list[Block]]:
    """Join the blocks' texts with blank lines and give each block its span and heading path."""
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    offset = 0
    for raw in raw_blocks:
        if raw.level is not None:
            while headings and headings[-1][0] >= raw.level:
                headings.pop()
            headings.append((raw.level, " ".join(raw.text.split())))
        if blocks:
            offset += len(_SEPARATOR)
        path = tuple(title for _, title in headings)
        blocks.append(Block(raw.text, offset, offset + len(raw.text), kind=raw.kind, heading_path=path))
        offset += len(raw.text)
    return _SEPARATOR.join(block.text for block in blocks), blocks


class HtmlLoader(Loader):
    """HTML (.html, .htm): visible text of <main>/<article> when present, else of the body."""

    suffixes = (".html", ".htm")
    format = "html"
    listed_order = 30

    def load(self, path: Path) -> Document:
        data = read_bytes(path)
        if not data.strip():
            raise LoaderError(path, EMPTY_PROBLEM)
        parser = _VisibleTextParser()
        parser.feed(_decode_html(data))
        parser.close()
        raw_blocks = parser.blocks
        if any(raw.in_content_root for raw in raw_blocks):
            raw_blocks = [raw for raw in raw_blocks if raw.in_content_root]
        if not raw_blocks:
            raise LoaderError(path, NO_TEXT_PROBLEM)
        text, blocks = _build_blocks(raw_blocks)
        first_h1 = next((raw.text for raw in parser.blocks if raw.level == 1), None)
        return Document(
            path=str(path),
            format=self.format,
            title=short_title(parser.title or first_h1 or path.stem),
            text=text,
            blocks=blocks,
            url=parser.canonical,
        )
