"""Cut a `Document` into token-bounded `Chunk`s that follow its structure.

Blocks are grouped into sections (same page, same heading path); small blocks of
a section are packed together, large ones are split at sentence boundaries, then
at word boundaries, with some overlap between consecutive pieces. A chunk's text
is always the verbatim slice `document.text[chunk.start:chunk.end]`.

Token counts are added up from pieces counted once each rather than recounted as
a chunk grows, so chunking stays linear in the document's length. Each finished
chunk is counted once more as a whole and split further if the sum was too low,
so `count_tokens(chunk.text) <= max_tokens` holds for every chunk except one that
is a single word longer than `max_tokens` on its own, which cannot be split.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from footnote.core.document import Block, Chunk, Document
from footnote.core.sentences import cut_points, trim
from footnote.core.span import Span

TokenCounter = Callable[[str], int]
# Character spans of a text's tokens, special tokens left out, in order (a tokenizer's offsets).
TokenOffsets = Sequence[tuple[int, int]]

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    tokens: int  # an upper estimate until the chunk is counted as a whole
    heading_only: bool = False


class _Chunker:
    def __init__(
        self,
        text: str,
        count_tokens: TokenCounter,
        max_tokens: int,
        overlap_tokens: int,
        offsets: TokenOffsets | None = None,
    ) -> None:
        self.text = text
        self.count = count_tokens
        # With the text's token offsets, a piece is costed by the tokens inside it instead of by
        # tokenizing it again: the same count where pieces start and end between words, as
        # sentences and words do, at a fraction of the time (most of chunking's).
        self._starts = [start for start, _ in offsets] if offsets is not None else None
        self._ends = [end for _, end in offsets] if offsets is not None else []
        # Tokenizers that add special tokens count them once per call; pieces are costed
        # without them so that summing pieces does not count them once per piece.
        self.base = count_tokens("")
        self.budget = max(max_tokens - self.base, 1)
        # Overlap beyond half a chunk would make pieces advance too slowly to be useful.
        self.overlap_tokens = min(overlap_tokens, self.budget // 2)
        self.limit = max_tokens
        self._word_costs: dict[int, int] = {}

    def cost(self, start: int, end: int) -> int:
        """Tokens of `text[start:end]`, special tokens left out."""
        if self._starts is not None:
            return max(bisect_right(self._ends, end) - bisect_left(self._starts, start), 0)
        return max(self.count(self.text[start:end]) - self.base, 0)

    def pack(self, blocks: list[Block]) -> list[_Span]:
        """Spans covering one section's blocks: small blocks packed, large blocks split."""
        spans: list[_Span] = []
        current: _Span | None = None
        for block in blocks:
            tokens = self.cost(block.start, block.end)
            joined = self._joined(current, block, tokens) if current else None
            if joined and joined.tokens <= self.budget:
                current = joined
                continue
            if tokens <= self.budget:
                if current:
                    spans.append(current)
                current = _Span(block.start, block.end, tokens, heading_only=block.kind == "heading")
                continue
            pieces = self._split_after(current, block)
            if current and pieces[0].start != current.start:
                spans.append(current)
            spans.extend(pieces[:-1])
            current = pieces[-1]
        if current:
            spans.append(current)
        return spans

    def _joined(self, current: _Span, block: Block, tokens: int) -> _Span:
        separator = self.cost(current.end, block.start)
        heading_only = current.heading_only and block.kind == "heading"
        return _Span(current.start, block.end, current.tokens + separator + tokens, heading_only)

    def _split_after(self, current: _Span | None, block: Block) -> list[_Span]:
        """Pieces of an oversized block; what comes just before it (headings, a short paragraph such
        as a title line) goes into its first piece if it fits, rather than making a chunk of its own."""
        if current is None:
            return self.split(block.start, block.end, self.budget)
        separator = self.cost(current.end, block.start)
        room = self.budget - current.tokens - separator
        if room < self.budget // 4:
            return self.split(block.start, block.end, self.budget)
        pieces = self.split(block.start, block.end, room)
        first = pieces[0]
        if first.tokens > room:  # its first sentence alone is too long to share a chunk
            return self.split(block.start, block.end, self.budget)
        pieces[0] = _Span(current.start, first.end, current.tokens + separator + first.tokens)
        return pieces

    def split(self, start: int, end: int, first_budget: int) -> list[_Span]:
        """Split `start:end` into pieces within budget, each overlapping the end of the one before.

        Without overlap, pieces are balanced: of the splits into the fewest pieces, the one with
        the smallest largest piece is taken, so a block just over the budget becomes two halves
        rather than a full chunk and a scrap.
        """
        atoms = list(self._atoms(start, end))
        pieces = self._greedy(atoms, first_budget, self.budget)
        if len(pieces) < 2 or self.overlap_tokens:
            return pieces  # overlapping pieces already carry context into a short last piece
        total = sum(atom.tokens for atom in atoms)
        low, high = max(1, -(-total // len(pieces))), self.budget
        while low < high:  # the smallest budget that still needs no more pieces
            middle = (low + high) // 2
            if len(self._greedy(atoms, min(first_budget, middle), middle)) <= len(pieces):
                high = middle
            else:
                low = middle + 1
        if high < self.budget:
            pieces = self._greedy(atoms, min(first_budget, high), high)
        return pieces

    def _greedy(self, atoms: list[_Span], first_budget: int, budget: int) -> list[_Span]:
        pieces: list[_Span] = []
        current: _Span | None = None
        limit = first_budget
        for atom in atoms:
            if current and current.tokens + atom.tokens > limit:
                pieces.append(current)
                limit = budget
                current = self._overlap(current, room=limit - atom.tokens)
            current = _Span(current.start, atom.end, current.tokens + atom.tokens) if current else atom
        if current:
            pieces.append(current)
        return pieces

    def _atoms(self, start: int, end: int) -> Iterator[_Span]:
        """Sentences of `start:end`, with sentences too long for a chunk broken into words."""
        for sentence_start, sentence_end in cut_points(self.text, start, end):
            tokens = self.cost(sentence_start, sentence_end)
            if tokens <= self.budget:
                yield _Span(sentence_start, sentence_end, tokens)
                continue
            for word in _WORD.finditer(self.text, sentence_start, sentence_end):
                yield _Span(word.start(), word.end(), self.cost(word.start(), word.end()))

    def _overlap(self, previous: _Span, room: int) -> _Span | None:
        """The last words of `previous`, about `overlap_tokens` long, that still leave `room`."""
        limit = min(self.overlap_tokens, room)
        words = list(_WORD.finditer(self.text, previous.start, previous.end))
        start: int | None = None
        tokens = 0
        # words[0] is never taken, so every piece starts later than the one before it.
        for word in reversed(words[1:]):
            word_tokens = self._word_cost(word)
            if tokens + word_tokens > limit:
                break
            start, tokens = word.start(), tokens + word_tokens
        if start is None:
            return None
        return _Span(start, previous.end, tokens)

    def _word_cost(self, word: re.Match[str]) -> int:
        # Balancing tries several budgets over the same words: each is counted once.
        cost = self._word_costs.get(word.start())
        if cost is None:
            cost = self._word_costs[word.start()] = self.cost(word.start(), word.end())
        return cost

    def fit(self, span: _Span) -> Iterator[_Span]:
        """`span` with its exact token count, halved at a word boundary while it is over the limit."""
        tokens = self.count(self.text[span.start : span.end])
        if tokens <= self.limit:
            yield _Span(span.start, span.end, tokens)
            return
        words = list(_WORD.finditer(self.text, span.start, span.end))
        if len(words) < 2:
            yield _Span(span.start, span.end, tokens)  # a single word cannot be split
            return
        middle = words[len(words) // 2]
        yield from self.fit(_Span(span.start, words[len(words) // 2 - 1].end(), 0))
        yield from self.fit(_Span(middle.start(), span.end, 0))


def _sections(blocks: list[Block]) -> Iterator[list[Block]]:
    """Runs of blocks on the same page under the same headings; headings join what follows them."""
    section: list[Block] = []
    content: Block | None = None  # the section's first non-heading block
    for block in blocks:
        if section:
            if block.page != section[-1].page:
                same_section = False
            elif block.kind == "heading":
                same_section = content is None
            else:
                same_section = content is None or content.heading_path == block.heading_path
            if not same_section:
                yield section
                section, content = [], None
        section.append(block)
        if content is None and block.kind != "heading":
            content = block
    if section:
        yield section


def _section_heading_path(section: list[Block]) -> tuple[str, ...]:
    content = next((block for block in section if block.kind != "heading"), section[-1])
    return content.heading_path


def chunk_document(
    document: Document,
    count_tokens: TokenCounter,
    max_tokens: int = 200,
    overlap_tokens: int = 40,
    offsets: TokenOffsets | None = None,
) -> list[Chunk]:
    """Chunks of `document` in reading order, each at most `max_tokens` by `count_tokens`.

    `offsets`, the character spans of `document.text`'s tokens by the same tokenizer, make
    chunking faster; each finished chunk is still counted by `count_tokens`."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if overlap_tokens < 0:
        raise ValueError(f"overlap_tokens must not be negative, got {overlap_tokens}")
    blocks = document.blocks or _whole_text_block(document.text)
    chunker = _Chunker(document.text, count_tokens, max_tokens, overlap_tokens, offsets)
    chunks: list[Chunk] = []
    for section in _sections(blocks):
        heading_path = _section_heading_path(section)
        for packed in chunker.pack(section):
            for span in chunker.fit(packed):
                chunks.append(
                    Chunk(
                        ordinal=len(chunks),
                        text=document.text[span.start : span.end],
                        span=Span(span.start, span.end, heading_path, section[0].page),
                        token_count=span.tokens,
                    )
                )
    return chunks


def _whole_text_block(text: str) -> list[Block]:
    """A document without blocks is chunked as one paragraph of its whole text."""
    start, end = trim(text, 0, len(text)) or (0, 0)
    return [Block(text[start:end], start, end)] if start < end else []
