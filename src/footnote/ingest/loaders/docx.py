"""Word documents (.docx): paragraphs, headings and tables, read with python-docx.

`Document.text` is the blocks' texts joined by blank lines. Paragraphs styled
"Heading N" (or "Title") start sections, so later blocks carry their heading
path; each table becomes one block with a row per line and cells joined by " | ".
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from footnote.core.document import Block, Document
from footnote.errors import LoaderError
from footnote.ingest.loaders import Loader
from footnote.ingest.loaders.damage import damage_from, raised_by
from footnote.ingest.loaders.text import EMPTY_PROBLEM, normalize_newlines, read_bytes, short_title

NO_TEXT_PROBLEM = "Word document has no text; nothing to index"
_SEPARATOR = "\n\n"
_HEADING_STYLE = re.compile(r"(?i)^heading\s*([1-9])$")
_LIST_STYLE = re.compile(r"(?i)^list")
# Paragraph-level heading depth for the "Title" style: above every "Heading N".
_TITLE_LEVEL = 0


def _unreadable(path: Path, exc: Exception) -> LoaderError:
    reason = " ".join(str(exc).split())[:100] or type(exc).__name__
    return LoaderError(
        path, f"Word document could not be read ({reason}); it may be corrupt or not a .docx — re-save it"
    )


def _heading_level(style_name: str) -> int | None:
    if style_name.strip().lower() == "title":
        return _TITLE_LEVEL
    match = _HEADING_STYLE.match(style_name.strip())
    return int(match.group(1)) if match else None


def _clean(text: str) -> str:
    """Paragraph text with line breaks kept and other whitespace runs collapsed per line."""
    lines = [" ".join(line.split()) for line in normalize_newlines(text).split("\n")]
    return "\n".join(line for line in lines if line)


def _table_text(table: Any) -> str:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        previous: Any = None
        for cell in row.cells:
            # python-docx repeats a horizontally merged cell once per grid column it spans.
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _blocks(word: Any) -> tuple[list[Block], str | None]:
    """The document's blocks with their heading paths, and its first heading."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    offset = 0
    first_heading: str | None = None
    for element in word.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        level: int | None = None
        if tag == "p":
            paragraph = Paragraph(element, word)
            text = _clean(paragraph.text)
            style = paragraph.style.name if paragraph.style is not None else ""
            level = _heading_level(style or "")
            kind = (
                "heading" if level is not None else "list" if _LIST_STYLE.match(style or "") else "paragraph"
            )
        elif tag == "tbl":
            text = _table_text(Table(element, word))
            kind = "table"
        else:
            continue
        if not text:
            continue
        if level is not None:
            while headings and headings[-1][0] >= level:
                headings.pop()
            title = " ".join(text.split())
            headings.append((level, title))
            first_heading = first_heading or title
        if blocks:
            offset += len(_SEPARATOR)
        path_titles = tuple(title for _, title in headings)
        blocks.append(Block(text, offset, offset + len(text), kind=kind, heading_path=path_titles))
        offset += len(text)
    return blocks, first_heading


class DocxLoader(Loader):
    """Word (.docx): headings from paragraph styles, tables as rows of text."""

    suffixes = (".docx",)
    format = "docx"
    listed_order = 50

    def load(self, path: Path) -> Document:
        data = read_bytes(path)
        if not data.strip():
            raise LoaderError(path, EMPTY_PROBLEM)
        import docx

        # zipfile, lxml and python-docx raise many types on damaged files
        with damage_from(docx, lambda exc: _unreadable(path, exc)):
            word = docx.Document(io.BytesIO(data))
            blocks, first_heading = _blocks(word)
        if not blocks:
            raise LoaderError(path, NO_TEXT_PROBLEM)
        core_title = ""
        try:
            core_title = short_title(word.core_properties.title or "")
        except Exception as exc:
            if not raised_by(exc, docx):
                raise
            core_title = ""  # unreadable properties only cost the title
        return Document(
            path=str(path),
            format=self.format,
            title=core_title or short_title(first_heading or "") or path.stem,
            text=_SEPARATOR.join(block.text for block in blocks),
            blocks=blocks,
        )
