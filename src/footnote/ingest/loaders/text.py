"""Plain text files, plus the decoding and span helpers the other loaders share."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from charset_normalizer import from_bytes

from footnote.core.cjk import first_words
from footnote.core.document import Block, Document
from footnote.errors import LoaderError
from footnote.ingest.loaders import Loader

EMPTY_PROBLEM = "file is empty; nothing to index"
BINARY_PROBLEM = "looks like a binary file, not text; remove it or convert it to text first"
TITLE_MAX_CHARS = 120
TITLE_MAX_WORDS = 24

_SNIFF_BYTES = 8192
# Share of control characters above which decoded "text" is really binary data.
_MAX_CONTROL_SHARE = 0.3
_CP1252_CHAOS_TOLERANCE = 0.1
_TEXT_CONTROLS = frozenset("\t\n\r\f\v")
_NON_BLANK_LINES = re.compile(r"(?:^[ \t]*\S.*(?:\n|\Z))+", re.MULTILINE)
# A manual page as `man` renders it: "TAR(1)      GNU TAR Manual      TAR(1)" on its first line.
_MANUAL_HEADER = re.compile(r"(\S+)\((\w+)\)\s.*\s\1\(\2\)\s*")
# In a rendered manual, sections start at the margin ("OPTIONS"), subsections a few spaces in
# ("   Informative output"), and the text under them further in.
_SUBSECTION_INDENT = 4


def read_bytes(path: Path) -> bytes:
    """The file's bytes, with unreadable files reported as a `LoaderError`."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise LoaderError(
            path, f"cannot read file ({exc.strerror or exc}); check it exists and is readable"
        ) from exc


def decode_text(data: bytes) -> str:
    """Decode bytes of unknown encoding without ever failing; newlines become LF."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = _decode_damaged_utf8(data) or _decode_legacy(data)
    return normalize_newlines(text.removeprefix("\ufeff"))


def _decode_damaged_utf8(data: bytes) -> str | None:
    """UTF-8 with a few bad bytes (each becomes U+FFFD), or None when it does not look like UTF-8.

    Text in a legacy code page almost never contains valid multi-byte UTF-8 sequences,
    so a file with more of those than bad bytes is UTF-8 that was damaged.
    """
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count("\ufffd")
    valid = sum(1 for char in text if ord(char) > 127 and char != "\ufffd")
    return text if valid > bad else None


def _decode_legacy(data: bytes) -> str:
    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return data.decode("latin-1")  # maps every byte, so it cannot fail
    # On short Western text charset-normalizer often ranks Baltic or Central European code
    # pages first, though Windows-1252 is by far the most common legacy encoding of text.
    for match in matches:
        if "cp1252" in match.could_be_from_charset and match.chaos <= best.chaos + _CP1252_CHAOS_TOLERANCE:
            try:
                return data.decode("cp1252")
            except UnicodeDecodeError:
                break
    return str(best)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text_file(path: Path) -> str:
    """Read a text file, refusing empty and binary files with a message that says what to do."""
    return text_from_bytes(path, read_bytes(path))


def text_from_bytes(path: Path, data: bytes) -> str:
    """Decode a text file's bytes, refusing empty and binary data; `path` names it in errors."""
    if not data.strip():
        raise LoaderError(path, EMPTY_PROBLEM)
    # UTF-16 legitimately contains NUL bytes; its BOM tells it apart from binary data.
    has_utf16_bom = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not has_utf16_bom and b"\x00" in data[:_SNIFF_BYTES]:
        raise LoaderError(path, BINARY_PROBLEM)
    text = decode_text(data)
    if not text.strip():
        raise LoaderError(path, EMPTY_PROBLEM)
    if _control_share(text[:_SNIFF_BYTES]) > _MAX_CONTROL_SHARE:
        raise LoaderError(path, BINARY_PROBLEM)
    return text


def _control_share(sample: str) -> float:
    controls = sum(1 for char in sample if char not in _TEXT_CONTROLS and unicodedata.category(char) == "Cc")
    return controls / max(len(sample), 1)


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Narrow `start:end` so the slice has no leading or trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """Spans of the runs of non-blank lines in `text[start:end]`, each trimmed of whitespace."""
    for match in _NON_BLANK_LINES.finditer(text, start, len(text) if end is None else end):
        span = trim_span(text, match.start(), match.end())
        if span[0] < span[1]:
            yield span


def short_title(line: str) -> str:
    """A one-line title of at most `TITLE_MAX_CHARS` characters and `TITLE_MAX_WORDS` words (each
    CJK character one): the title goes before every chunk the embedder reads, and a file whose
    first line is a whole paragraph of Chinese would otherwise put 120 characters there."""
    return first_words(" ".join(line.split())[:TITLE_MAX_CHARS], TITLE_MAX_WORDS).rstrip()


def first_line_title(text: str, fallback: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return short_title(line)
    return fallback


class TextLoader(Loader):
    """Plain text: paragraphs are runs of lines separated by blank lines."""

    suffixes = (".txt", ".text")
    format = "text"
    listed_order = 20

    def load(self, path: Path) -> Document:
        return self.load_bytes(path, read_bytes(path))

    def load_bytes(self, path: Path, data: bytes) -> Document:
        """Load text already read (or decompressed) from `path`."""
        text = text_from_bytes(path, data)
        spans = list(paragraph_spans(text))
        title = first_line_title(text, file_stem(path))
        if spans and _MANUAL_HEADER.fullmatch(text[spans[0][0] : spans[0][1]].split("\n", 1)[0]):
            blocks, title = manual_blocks(text, spans, title)
        else:
            blocks = [Block(text=text[start:end], start=start, end=end) for start, end in spans]
        return Document(path=str(path), format=self.format, title=title, text=text, blocks=blocks)


def manual_blocks(text: str, spans: list[tuple[int, int]], title: str) -> tuple[list[Block], str]:
    """A rendered manual page's paragraphs (`spans`) under the sections and subsections that hold
    them, each heading a block of its own, and the page's title: its NAME line ("tar - an
    archiving utility") where it has one, else `title`. The first and last lines (the page's
    header and footer) are not headings."""
    blocks: list[Block] = []
    path: tuple[str, ...] = ()
    named = ""
    first, last = spans[0][0], spans[-1][1]
    for start, end in spans:
        # A paragraph's leading lines near the margin are headings: "OPTIONS", "   Informative output".
        while first < start < end:
            line_end = text.find("\n", start, end)
            line_end = end if line_end < 0 else line_end
            indent = start - text.rfind("\n", 0, start) - 1
            if line_end == last or indent > _SUBSECTION_INDENT:
                break
            line = text[start:line_end].strip()
            path = (line,) if indent == 0 else (*path[:1], line)
            blocks.append(Block(line, start, start + len(line), kind="heading", heading_path=path))
            start = trim_span(text, line_end, end)[0]
        if start < end:
            if path[:1] == ("NAME",) and not named:
                named = short_title(text[start:end])
            blocks.append(Block(text=text[start:end], start=start, end=end, heading_path=path))
    return blocks, named or title


def file_stem(path: Path) -> str:
    """The file name without its suffixes of type and compression ("notes.md.gz" → "notes")."""
    name = path.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    return Path(name).stem or path.name
