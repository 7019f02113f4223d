"""PDF files: the text layer of each page, read with pypdf, and OCR of pages without one.

`Document.text` is the page texts joined by blank lines; every block lies on one
page and records its 1-based page number, so citations can point at a page.
Headings come from the PDF outline (bookmarks) when the file has one. A page with no
text layer (a scan) is read from its images by tesseract (`loaders/ocr.py`) unless OCR
is off; its text takes the page's place, so its blocks carry its page number too.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import statistics
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pypdf
from pypdf import PageObject, PasswordType, PdfReader

from footnote.core.document import Block, Document
from footnote.errors import LoaderError
from footnote.ingest.loaders import Loader, LoadOptions, OcrMode
from footnote.ingest.loaders.damage import damage_from, raised_by
from footnote.ingest.loaders.ocr import OCR_PACKAGES, Ocr, OcrError, find_ocr
from footnote.ingest.loaders.text import (
    EMPTY_PROBLEM,
    first_line_title,
    normalize_newlines,
    paragraph_spans,
    read_bytes,
    short_title,
    trim_span,
)

_DECRYPT_FIX = "decrypt it first (e.g. qpdf --decrypt) and ingest again"
PASSWORD_PROBLEM = f"PDF is password-protected; {_DECRYPT_FIX}"
NO_TEXT_PROBLEM = "PDF has no text layer (scanned images?); run OCR first, e.g. ocrmypdf"
NO_TESSERACT_PROBLEM = (
    f"PDF has no text layer (scanned images?) and tesseract is not installed: apt install {OCR_PACKAGES}, "
    "or run OCR first (ocrmypdf)"
)
NOTHING_READ_PROBLEM = (
    "PDF has no text layer and OCR (tesseract) read no text in its page images: "
    "check that the pages are not blank and that the scan is legible"
)

log = logging.getLogger(__name__)

# pypdf logs a warning for every malformed-but-readable object; users can do nothing about them.
logging.getLogger("pypdf").setLevel(logging.ERROR)

_PAGE_SEPARATOR = "\n\n"
# Lines further apart than this share of the usual line gap are in different paragraphs.
_PARAGRAPH_GAP_SHARE = 1.3
_LINE_GAP_PER_FONT_SIZE = 1.6
# Without blank lines, a line much shorter than the page's longest one ends a paragraph,
# and so does a fairly short one that ends a sentence before a capitalised line.
_SHORT_LINE_SHARE = 0.75
_SENTENCE_LINE_SHARE = 0.85
_MAX_LINES_PER_PARAGRAPH = 6
# Authoring tools often store the source file's name or a placeholder as the title.
_PLACEHOLDER_TITLE = re.compile(
    r"(?i)(untitled|document\d*|microsoft word - .*|.*\.(docx?|odt|rtf|tex|dvi|pdf|indd|pages))$"
)
_SENTENCE_ENDINGS = (".", "!", "?", ":", '."', ".'", ".)")


@dataclass(frozen=True)
class _OutlineEntry:
    title: str
    page: int  # 1-based


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:100] or type(exc).__name__


def _unreadable(path: Path, exc: Exception) -> LoaderError:
    problem = f"PDF could not be read ({_reason(exc)}); the file may be truncated or corrupt"
    return LoaderError(path, f"{problem} — re-export or re-download it")


def _undecryptable(path: Path, exc: Exception) -> LoaderError:
    problem = f"PDF is encrypted and could not be decrypted ({_reason(exc)})"
    return LoaderError(path, f"{problem}; {_DECRYPT_FIX}")


def _open(path: Path) -> PdfReader:
    data = read_bytes(path)
    if not data.strip():
        raise LoaderError(path, EMPTY_PROBLEM)
    # pypdf raises many exception types on malformed input; all of them mean "this file is damaged".
    with damage_from(pypdf, lambda exc: _unreadable(path, exc)):
        reader = PdfReader(io.BytesIO(data))
        encrypted = reader.is_encrypted
    if encrypted:
        # e.g. AES without the optional `cryptography` package
        with damage_from(pypdf, lambda exc: _undecryptable(path, exc)):
            unlocked = reader.decrypt("") != PasswordType.NOT_DECRYPTED
        if not unlocked:
            raise LoaderError(path, PASSWORD_PROBLEM)
    return reader


@dataclass
class _Line:
    text: str = ""
    y: float | None = None  # baseline height on the page, from the line's first visible text
    size: float | None = None  # font size there, in the same units as `y`


def _positioned_lines(page: PageObject) -> list[_Line]:
    """The page's extracted lines, each with the height where it is printed when pypdf reports it."""
    lines = [_Line()]

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        for index, piece in enumerate(text.split("\n")):
            if index:
                lines.append(_Line())
            line = lines[-1]
            line.text += piece
            if line.y is None and piece.strip():
                line.y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                line.size = abs(size * tm[3] * cm[3]) or size

    text = page.extract_text(visitor_text=visit) or ""
    if "\n".join(line.text for line in lines) != text:
        return [_Line(raw) for raw in text.split("\n")]
    return lines


def _page_text(page: PageObject) -> str:
    """The page's text, with a blank line wherever the vertical gap shows a paragraph break."""
    lines = _positioned_lines(page)
    gaps = [
        above.y - below.y
        for above, below in itertools.pairwise(lines)
        if above.y is not None and below.y is not None and above.y > below.y
    ]
    typical_gap = statistics.median(gaps) if gaps else 0.0
    out: list[str] = []
    previous: _Line | None = None
    for line in lines:
        if previous and previous.y is not None and line.y is not None and typical_gap:
            # A page of one-line paragraphs has only paragraph gaps; the font size bounds the line gap.
            line_gap = min(typical_gap, _LINE_GAP_PER_FONT_SIZE * line.size) if line.size else typical_gap
            gap = previous.y - line.y
            if gap > _PARAGRAPH_GAP_SHARE * line_gap or gap < -line_gap:
                out.append("")
        out.append(normalize_newlines(line.text).rstrip())
        if line.text.strip():
            previous = line
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _page_texts(reader: PdfReader, path: Path) -> list[str]:
    with damage_from(pypdf, lambda exc: _unreadable(path, exc)):
        return [_page_text(page) for page in reader.pages]


def _with_scans_read(reader: PdfReader, path: Path, page_texts: list[str], ocr: Ocr) -> list[str]:
    """`page_texts` with each empty one replaced by the OCR of that page's images."""
    read = list(page_texts)
    with damage_from(pypdf, lambda exc: _unreadable(path, exc)):
        for number, page in enumerate(reader.pages, start=1):
            if read[number - 1]:
                continue
            try:
                read[number - 1] = ocr.page_text(page)
            except OcrError as exc:
                problem = f"tesseract could not read page {number} ({exc})"
                raise LoaderError(
                    path, f"{problem}; check `tesseract --list-langs`, or set FOOTNOTE_OCR=off"
                ) from exc
    return read


def _line_groups(text: str) -> Iterator[tuple[int, int]]:
    """Paragraph spans for a page whose text has no blank lines to separate paragraphs."""
    spans = []
    start = 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    width = max(end - begin for begin, end in spans)
    group_start: int | None = None
    lines_in_group = 0
    for index, (begin, end) in enumerate(spans):
        if group_start is None:
            group_start, lines_in_group = begin, 0
        lines_in_group += 1
        ends_sentence = text[begin:end].endswith(_SENTENCE_ENDINGS)
        next_is_capital = (
            index + 1 < len(spans) and text[spans[index + 1][0] : spans[index + 1][0] + 1].isupper()
        )
        length = end - begin
        if (
            length < _SHORT_LINE_SHARE * width
            or (ends_sentence and next_is_capital and length < _SENTENCE_LINE_SHARE * width)
            or (ends_sentence and lines_in_group >= _MAX_LINES_PER_PARAGRAPH)
        ):
            yield trim_span(text, group_start, end)
            group_start = None
    if group_start is not None:
        yield trim_span(text, group_start, spans[-1][1])


def _paragraphs(page_text: str) -> Iterator[tuple[int, int]]:
    if "\n\n" in page_text:
        return paragraph_spans(page_text)
    return (span for span in _line_groups(page_text) if span[0] < span[1])


def _join_pages(page_texts: list[str]) -> tuple[str, list[Block]]:
    parts: list[str] = []
    blocks: list[Block] = []
    offset = 0
    for number, page_text in enumerate(page_texts, start=1):
        if not page_text:
            continue
        if parts:
            offset += len(_PAGE_SEPARATOR)
        for start, end in _paragraphs(page_text):
            blocks.append(Block(page_text[start:end], offset + start, offset + end, page=number))
        parts.append(page_text)
        offset += len(page_text)
    return _PAGE_SEPARATOR.join(parts), blocks


def _walk_outline(reader: PdfReader, items: list[Any], entries: list[_OutlineEntry]) -> None:
    for item in items:
        if isinstance(item, list):
            _walk_outline(reader, item, entries)
            continue
        page = reader.get_destination_page_number(item)
        title = short_title(str(item.title or ""))
        if isinstance(page, int) and page >= 0 and title:
            entries.append(_OutlineEntry(title, page + 1))


def _outline_entries(reader: PdfReader) -> list[_OutlineEntry]:
    entries: list[_OutlineEntry] = []
    try:
        _walk_outline(reader, reader.outline, entries)
    except Exception as exc:
        # The outline is optional navigation; a broken one must not stop the text being indexed.
        if not raised_by(exc, pypdf):
            raise
        return []
    return sorted(entries, key=lambda entry: entry.page)


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _match_entries(blocks: list[Block], entries: list[_OutlineEntry]) -> dict[int, str]:
    """Index of the block where each entry's section starts, found by the entry's title text."""
    starts: dict[int, str] = {}
    cursor = 0
    for entry in entries:
        title = _folded(entry.title)
        found = next(
            (i for i in range(cursor, len(blocks)) if _folded(blocks[i].text).startswith(title)), None
        )
        if found is not None:
            starts[found] = entry.title
            cursor = found + 1
        elif not starts:
            # The title is not in the text layer: the section starts with its page.
            starts[0] = entry.title
    return starts


def _apply_outline(blocks: list[Block], entries: list[_OutlineEntry]) -> list[Block]:
    """Give blocks the title of the outline entry they fall under as their heading path."""
    if not entries:
        return blocks
    pending = deque(entries)
    current: tuple[str, ...] = ()
    result: list[Block] = []
    for page, grouped in itertools.groupby(blocks, key=lambda block: block.page or 0):
        page_blocks = list(grouped)
        here: list[_OutlineEntry] = []
        while pending and pending[0].page <= page:
            entry = pending.popleft()
            if entry.page < page:
                current = (entry.title,)
            else:
                here.append(entry)
        starts = _match_entries(page_blocks, here)
        for index, block in enumerate(page_blocks):
            if index in starts:
                current = (starts[index],)
            is_title = index in starts and _folded(block.text) == _folded(starts[index])
            result.append(replace(block, heading_path=current, kind="heading" if is_title else block.kind))
    return result


def _metadata_title(reader: PdfReader) -> str:
    try:
        metadata = reader.metadata
        raw = metadata.title if metadata is not None else None
    except Exception as exc:
        if not raised_by(exc, pypdf):
            raise
        return ""  # unreadable metadata only costs the title; the text is still usable
    title = short_title(str(raw)) if raw else ""
    return "" if _PLACEHOLDER_TITLE.match(title) else title


class PdfLoader(Loader):
    """PDF (.pdf): the text layer, and tesseract's reading of scanned pages unless OCR is off."""

    suffixes = (".pdf",)
    format = "pdf"
    listed_order = 40

    def __init__(self, ocr: OcrMode = "auto") -> None:
        self.ocr = ocr

    def with_options(self, options: LoadOptions) -> PdfLoader:
        return self if options.ocr == self.ocr else PdfLoader(options.ocr)

    def load(self, path: Path) -> Document:
        reader = _open(path)
        page_texts = self._read_pages(reader, path)
        text, blocks = _join_pages(page_texts)
        blocks = _apply_outline(blocks, _outline_entries(reader))
        return Document(
            path=str(path),
            format=self.format,
            title=_metadata_title(reader) or first_line_title(text, path.stem),
            text=text,
            blocks=blocks,
        )

    def _read_pages(self, reader: PdfReader, path: Path) -> list[str]:
        """Each page's text, scans read by OCR when it is on; a PDF with none is refused."""
        page_texts = _page_texts(reader, path)
        if all(page_texts) or self.ocr == "off":
            if not any(page_texts):
                raise LoaderError(path, NO_TEXT_PROBLEM)
            return page_texts
        ocr = find_ocr()
        if ocr is None:
            if not any(page_texts):
                raise LoaderError(path, NO_TESSERACT_PROBLEM)
            scans = page_texts.count("")
            log.warning(
                "%s: %d pages without a text layer are left out: apt install %s", path, scans, OCR_PACKAGES
            )
            return page_texts
        page_texts = _with_scans_read(reader, path, page_texts, ocr)
        if not any(page_texts):
            raise LoaderError(path, NOTHING_READ_PROBLEM)
        return page_texts
