"""Streaming text: UTF-8 checks, incremental tokenization at safe cuts, bounded memory."""

from __future__ import annotations

import io
import re
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import pytest

from footnote.perplexity import ScoringOptions, TextInputError, Tokenizer, TokenScorer, score_file
from footnote.perplexity.text import TokenTexts, iter_text, iter_token_ids, safe_cut
from tests.unit.test_perplexity import CharTokenizer, RecordingScorer

_PRETOKEN = re.compile(r"\n+| ?\w+| ?[^\w\s]+|\s+")


class WordTokenizer(Tokenizer):
    """A greedy pre-tokenizer like GPT-2's: runs of newlines and space-prefixed words are single tokens.

    Cutting inside "\\n\\n" or between a space and its word changes the ids, which is what the
    safe-cut check has to notice.
    """

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.calls = 0

    def tokenize(self, text: str) -> list[int]:
        self.calls += 1
        return [
            self.vocabulary.setdefault(piece, len(self.vocabulary) + 1) for piece in _PRETOKEN.findall(text)
        ]

    def piece(self, token_id: int) -> bytes:
        return next(text for text, i in self.vocabulary.items() if i == token_id).encode("utf-8")


def test_invalid_utf8_names_the_byte_and_its_offset() -> None:
    data = ("x" * 70_000).encode() + b"\xff\xfe tail"
    with pytest.raises(TextInputError, match=r"notes.txt is not valid UTF-8: bytes ff at byte offset 70000"):
        list(iter_text(io.BytesIO(data), "notes.txt", piece_bytes=4096))


def test_a_character_split_between_reads_is_decoded_whole() -> None:
    text = "caf\u00e9 \u4e2d\u6587 \U0001f600" * 50
    pieces = list(iter_text(io.BytesIO(("\ufeff" + text).encode()), piece_bytes=7))
    assert "".join(pieces) == text  # the byte order mark is dropped, nothing else


def test_truncated_character_at_the_end_is_an_error() -> None:
    with pytest.raises(TextInputError, match="bytes e4 b8 at byte offset 3"):
        list(iter_text(io.BytesIO(b"abc\xe4\xb8"), "cut.txt"))


def test_safe_cut_refuses_cuts_that_change_the_tokens() -> None:
    tokenizer = WordTokenizer()
    text = "alpha beta\n\ngamma delta epsilon " * 4
    cut = safe_cut(tokenizer, text)
    assert cut > 0
    whole = tokenizer.tokenize(text)
    assert tokenizer.tokenize(text[:cut]) + tokenizer.tokenize(text[cut:]) == whole
    assert text[cut - 1 : cut + 1] != "\n\n"


@pytest.mark.parametrize("piece", [5, 17, 64, 1000])
def test_incremental_tokens_equal_tokenizing_the_whole_text(piece: int) -> None:
    tokenizer = WordTokenizer()
    text = "".join(f"Line {i}: the  quick\n\nbrown fox, {i * 7}!\n  indented words\n" for i in range(200))
    pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
    assert list(iter_token_ids(tokenizer, pieces)) == tokenizer.tokenize(text)


def test_bos_comes_first_when_the_model_wants_it() -> None:
    assert list(iter_token_ids(CharTokenizer(add_bos=True), ["ab"])) == [0, 97, 98]
    assert list(iter_token_ids(CharTokenizer(), ["ab"])) == [97, 98]


def test_token_texts_join_back_into_the_input_across_split_characters() -> None:
    class ByteTokenizer(Tokenizer):
        def tokenize(self, text: str) -> list[int]:
            return list(text.encode())

        def piece(self, token_id: int) -> bytes:
            return bytes([token_id])

    text = "a\u00e9\u4e2db"
    texts = TokenTexts(ByteTokenizer())
    out = [texts.next(b) for b in text.encode()]
    assert out == [("a", 0), ("", 1), ("é", 1), ("", 2), ("", 2), ("中", 2), ("b", 3)]
    assert "".join(t for t, _ in out) == text


class _CountingReader(io.RawIOBase):
    """A file-like stream of generated text that records how far it has been read."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.position = 0
        self._line = b"the cat sat on the mat and looked at the door\n"

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.total - self.position)
        chunk = (self._line * (n // len(self._line) + 2))[:n]
        buffer[:n] = chunk
        self.position += n
        return n


class _ZeroScorer(TokenScorer):
    """Scores instantly; records how much of the input was read when the first window came."""

    def __init__(self, reader: _CountingReader) -> None:
        self.tokenizer = WordTokenizer()
        self.context_length = 256
        self.reader = reader
        self.read_at_first_window: int | None = None

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        if self.read_at_first_window is None:
            self.read_at_first_window = self.reader.position
        return [-1.0] * (len(token_ids) - first_scored)


def test_a_large_stream_is_scored_while_it_is_read_in_bounded_memory(tmp_path: Path) -> None:
    total = 2_000_000
    reader = _CountingReader(total)
    scorer = _ZeroScorer(reader)
    tracemalloc.start()
    try:
        from footnote.perplexity import score_text

        pieces = iter_text(io.BufferedReader(reader), piece_bytes=8192)
        result = score_text(scorer, pieces, ScoringOptions(context_length=256))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reader.position == total
    assert (
        scorer.read_at_first_window is not None
        and scorer.read_at_first_window <= 2 * 8192 + io.DEFAULT_BUFFER_SIZE
    )
    assert result.tokens_read > 400_000
    assert peak < total / 8, f"peak traced memory {peak} bytes for a {total}-byte input"


def test_score_file_reads_a_file_and_names_it_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("na\u00efve".encode("latin-1"))
    with pytest.raises(TextInputError, match=f"{re.escape(str(path))} is not valid UTF-8"):
        score_file(RecordingScorer(), path)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(TextInputError, match=r"empty\.txt is empty"):
        score_file(RecordingScorer(), empty)
