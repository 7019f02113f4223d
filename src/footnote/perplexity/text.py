"""Text in bounded memory: bytes read in pieces, checked UTF-8, tokenized at safe boundaries.

A file of any size streams through: at most one piece of text (plus a carried-over tail)
is held, and tokens leave as soon as they are known. A cut is "safe" when tokenizing
both sides separately gives the same ids as tokenizing them together; candidates are
right after a line break or right before a space, and each is checked on the text
around it before it is used.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import Protocol

from footnote.models.scoring import Tokenizer
from footnote.perplexity.errors import TextInputError

PIECE_BYTES = 1 << 16
_CHECK_CHARS = 48  # text each side of a candidate cut used to verify it
_MAX_CANDIDATES = 16
_FORCE_CUT_CHARS = 1 << 20  # past this much text without a safe cut, cut anyway


class ByteReader(Protocol):
    """Anything with a binary `read`: an open file, `sys.stdin.buffer`, a socket file."""

    def read(self, size: int = -1, /) -> bytes: ...


def iter_text(stream: ByteReader, source: str = "text", piece_bytes: int = PIECE_BYTES) -> Iterator[str]:
    """Decode `stream` as UTF-8 piece by piece; invalid bytes raise a TextInputError with their offset."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    consumed = 0
    first = True
    while True:
        data = stream.read(piece_bytes)
        final = not data
        held = len(decoder.getstate()[0])
        try:
            text = decoder.decode(data, final=final)
        except UnicodeDecodeError as exc:
            offset = consumed - held + exc.start
            bad = (exc.object[exc.start : exc.end] or b"?")[:4].hex(" ")
            raise TextInputError(
                f"{source} is not valid UTF-8: bytes {bad} at byte offset {offset}; "
                f"convert it first, e.g. `iconv -f latin1 -t utf-8 {source}`"
            ) from None
        consumed += len(data)
        if first and text:
            text = text.removeprefix("\ufeff")
            first = False
        if text:
            yield text
        if final:
            return


def iter_text_from_string(text: str, piece_chars: int = PIECE_BYTES) -> Iterator[str]:
    for start in range(0, len(text), piece_chars):
        yield text[start : start + piece_chars]


def _candidate_cuts(text: str, lowest: int) -> Iterator[int]:
    """Positions after a line break, or before a space that follows a non-space, latest first."""
    found = 0
    position = len(text) - _CHECK_CHARS
    while position > lowest and found < _MAX_CANDIDATES:
        newline = text.rfind("\n", lowest, position)
        space = text.rfind(" ", lowest, position)
        if newline < 0 and space < 0:
            return
        if newline >= space:
            cut, position = newline + 1, newline
        else:
            cut, position = space, space
            if not text[space - 1 : space].strip():
                continue
        found += 1
        yield cut


def _is_safe_cut(tokenizer: Tokenizer, text: str, cut: int) -> bool:
    left = text[max(0, cut - _CHECK_CHARS) : cut]
    right = text[cut : cut + _CHECK_CHARS]
    return tokenizer.tokenize(left + right) == tokenizer.tokenize(left) + tokenizer.tokenize(right)


def safe_cut(tokenizer: Tokenizer, text: str) -> int:
    """Where to cut `text` so that its head can be tokenized now; 0 when no checked cut is found."""
    for cut in _candidate_cuts(text, lowest=len(text) // 2):
        if _is_safe_cut(tokenizer, text, cut):
            return cut
    return 0


def iter_token_ids(tokenizer: Tokenizer, pieces: Iterable[str]) -> Iterator[int]:
    """Token ids of the concatenated pieces (BOS first when the model wants one), incrementally."""
    if tokenizer.add_bos and tokenizer.bos_id is not None:
        yield tokenizer.bos_id
    pending = ""
    for piece in pieces:
        pending += piece
        cut = safe_cut(tokenizer, pending)
        if cut == 0 and len(pending) >= _FORCE_CUT_CHARS:
            cut = len(pending) // 2  # no checked boundary in 1 MiB: bounded memory wins
        if cut:
            yield from tokenizer.tokenize(pending[:cut])
            pending = pending[cut:]
    if pending:
        yield from tokenizer.tokenize(pending)


class TokenTexts:
    """The text each token completes and its character offset, fed token by token in order.

    A token that ends inside a multi-byte character gets "" and the token that completes
    the character gets all of it, so the texts of all tokens join back into the input.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.offset = 0

    def next(self, token_id: int) -> tuple[str, int]:
        text = self._decoder.decode(self._tokenizer.piece(token_id))
        offset = self.offset
        self.offset += len(text)
        return text, offset
