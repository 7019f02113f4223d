"""Sentence boundaries: where answers, sources and chunks are cut.

Both `split_sentences` and `SentenceAssembler` run the same scanner, so a streamed answer
is cut exactly where the whole answer would be. Each candidate boundary (a terminator or a
newline) is decided by looking back at the word before it and at most a few characters
ahead; while streaming, a candidate whose look-ahead has not arrived yet waits.

`cut_points` is the chunker's coarser rule: every terminator run before whitespace and every
line break is a place a chunk may end, abbreviation or not. It is kept apart on purpose: a
chunk cut after "Dr." still reads whole once packed with its neighbours, while the checked
sentences of an answer must be real sentences; and the index's chunks (and so every search
figure) are made with this rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Numbers are capped at three digits so that a bracketed year such as "[1822]" stays text.
MARKER = re.compile(r"\[\s*\d{1,3}(?:\s*[,;\u2013-]\s*\d{1,3})*\s*\]")

_MARKER_WITH_SPACE = re.compile(r"[ \t]*" + MARKER.pattern)
_MARKER_ITEM = re.compile(r"(\d+)(?:\s*[\u2013-]\s*(\d+))?")
_TRAILING_MARKERS = re.compile(r"(?:[ \t]*" + MARKER.pattern + r")*")
# What a marker looks like while it is still arriving: "[", "[1", "[1, 2".
_PARTIAL_MARKER = re.compile(r"[ \t]*\[[\d\s,;\u2013-]*")
_CANDIDATE = re.compile(r"[.!?\u3002\uff01\uff1f\uff1b\n]")
_TERMINATORS = ".!?\u3002\uff01\uff1f\uff1b"
# Chinese full stop, exclamation and question marks, and the semicolon that ends a clause.
_CJK_TERMINATORS = "\u3002\uff01\uff1f\uff1b"
_CLOSERS = "\"')*\u201d\u2019\u300d\u300f\uff09"
_LINE_ITEM = re.compile(r"[ \t]*(?:(?:[-*+\u2022>]|\d{1,3}[.)]|#{1,6})[ \t]|\|)")
# A bullet or numbered item up to its text: a line indented at least that far continues it.
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+")
_LIST_NUMBER = re.compile(r"[ \t]*\d{1,3}")
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
_WORD_OPENERS = "([{\"'\u201c\u2018"

# Characters after a boundary needed before it is final: enough for a list marker like "123. ".
LOOKAHEAD = 6
_MAX_RANGE = 20

# Abbreviations that (practically) never end a sentence, so a capital after them proves nothing.
_NEVER_FINAL_TEXT = (
    "mr mrs ms dr prof st sr jr mt vs cf approx ca resp viz dept gen gov sen rep capt lt col sgt rev"
)
_NEVER_FINAL = frozenset(_NEVER_FINAL_TEXT.split())
# Abbreviations that are not final when a number follows: "Fig. 3", "No. 5", "pp. 12".
_BEFORE_NUMBER_TEXT = "no nos fig figs p pp vol vols ch sec eq eqs art ex"
_BEFORE_NUMBER = frozenset(_BEFORE_NUMBER_TEXT.split())
# Dotted forms that do end sentences often enough to follow the normal rules.
_DOTTED_MAY_END = frozenset({"a.m", "p.m"})

# The chunker's rule: . ! ? (plus closing quotes or brackets) before whitespace, CJK full
# stops, which need no space after them, and a line break.
_CUT_POINT = re.compile(r"[.!?]+[\"')\]”’]*(?=\s|$)|[。！？]+|\n")

Decision = tuple[int, int] | None  # (sentence end or -1 for "no boundary", resume index)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences in `text`, without surrounding whitespace."""
    ends, _ = _scan(text, 0, final=True)
    spans: list[tuple[int, int]] = []
    start = 0
    for end in [*ends, len(text)]:
        span = trim(text, start, end)
        if span is not None:
            spans.append(span)
        start = end
    return spans


def cut_points(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Spans of the pieces of `text[start:end]` between the chunker's cut points, trimmed of
    surrounding whitespace (see the module's docstring for why this rule is not `split_sentences`)."""
    position = start
    for match in _CUT_POINT.finditer(text, start, end):
        span = trim(text, position, match.end())
        if span is not None:
            yield span
        position = match.end()
    span = trim(text, position, end)
    if span is not None:
        yield span


def strip_markers(text: str) -> tuple[str, list[int]]:
    """Remove citation markers; return the text and the cited numbers, first occurrence first."""
    numbers: list[int] = []
    for match in MARKER.finditer(text):
        for number in _marker_numbers(match.group()):
            if number not in numbers:
                numbers.append(number)
    return _MARKER_WITH_SPACE.sub("", text).strip(), numbers


def is_line_item(text: str) -> bool:
    """Whether `text` starts like a list item, heading, quote or table row."""
    return _LINE_ITEM.match(text) is not None


class SentenceAssembler:
    """Cuts a streamed answer into sentences as soon as each one is certainly complete.

    Only undecided candidates are re-examined on each `feed`, so the work stays linear in
    the length of the answer.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._text = ""
        self._start = 0  # where the next sentence begins
        self._scan_from = 0  # first boundary candidate not decided yet

    def feed(self, piece: str) -> list[str]:
        """Add streamed text; return the sentences completed by it (markers included)."""
        self._text += piece
        ends, self._scan_from = _scan(self._text, self._scan_from, final=False)
        sentences = self._emit(ends)
        self._drop_consumed_lines()
        return sentences

    def finish(self) -> list[str]:
        """Return every sentence not yet returned and start over."""
        ends, _ = _scan(self._text, self._scan_from, final=True)
        sentences = self._emit([*ends, len(self._text)])
        self._reset()
        return sentences

    def _emit(self, ends: list[int]) -> list[str]:
        sentences: list[str] = []
        for end in ends:
            span = trim(self._text, self._start, end)
            if span is not None:
                sentences.append(self._text[span[0] : span[1]])
            self._start = end
        return sentences

    def _drop_consumed_lines(self) -> None:
        # Decisions look back no further than the start of the current line.
        cut = self._text.rfind("\n", 0, self._start) + 1
        if cut > 0:
            self._text = self._text[cut:]
            self._start -= cut
            self._scan_from -= cut


def _marker_numbers(marker: str) -> list[int]:
    numbers: list[int] = []
    for match in _MARKER_ITEM.finditer(marker):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if first <= last <= first + _MAX_RANGE:
            numbers.extend(range(first, last + 1))
        else:
            numbers.extend([first, last])
    return numbers


def trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    """`start:end` of `text` without its surrounding whitespace; None when nothing else is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _scan(text: str, pos: int, final: bool) -> tuple[list[int], int]:
    """Sentence ends decided from `pos` on, and where to resume; `final` means no more text comes."""
    ends: list[int] = []
    while True:
        match = _CANDIDATE.search(text, pos)
        if match is None:
            return ends, len(text)
        index = match.start()
        if text[index] == "\n":
            decision = _decide_newline(text, index, final)
        else:
            decision = _decide_terminator(text, index, final)
        if decision is None:
            return ends, index
        end, pos = decision
        if end >= 0:
            ends.append(end)


def _has_lookahead(text: str, end: int) -> bool:
    if _PARTIAL_MARKER.fullmatch(text, end):
        return False
    visible = end
    while visible < len(text) and text[visible].isspace():
        visible += 1
    return len(text) - visible >= LOOKAHEAD


def _decide_terminator(text: str, index: int, final: bool) -> Decision:
    run_end = index
    while run_end < len(text) and text[run_end] in _TERMINATORS:
        run_end += 1
    end = run_end
    while end < len(text) and text[end] in _CLOSERS:
        end += 1
    match = _TRAILING_MARKERS.match(text, end)
    end = match.end() if match else end
    if not final and not _has_lookahead(text, end):
        return None
    run = text[index:run_end]
    if any(char in _CJK_TERMINATORS for char in run):
        return end, end
    if end < len(text) and not text[end].isspace():
        return -1, run_end  # "3.5", "example.com", "e.g."
    following = text[end:].lstrip()[:1]
    if following.islower():
        return -1, run_end
    if set(run) == {"."} and _ends_abbreviation(text, index, following):
        return -1, run_end
    if run == "." and _LIST_NUMBER.fullmatch(text, text.rfind("\n", 0, index) + 1, index):
        return -1, run_end  # "1. Andy Murray won": the number of a list item, not a sentence
    return end, end


def _ends_abbreviation(text: str, dot: int, following: str) -> bool:
    start = dot
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in _WORD_OPENERS:
        start -= 1
    word = text[start:dot]
    if len(word) == 1 and word.isupper():
        return True  # an initial, as in "J. R. Smith"
    lowered = word.lower()
    if lowered in _NEVER_FINAL:
        return True
    if lowered in _BEFORE_NUMBER and following.isdigit():
        return True
    return _DOTTED.fullmatch(lowered) is not None and lowered not in _DOTTED_MAY_END


def _decide_newline(text: str, index: int, final: bool) -> Decision:
    after = index + 1
    while after < len(text) and text[after] in " \t\r\f\v":
        after += 1
    if after < len(text) and text[after] == "\n":
        return index, index + 1  # a blank line ends a paragraph
    if after >= len(text):
        return (index, index + 1) if final else None
    if not final and len(text) - after < LOOKAHEAD:
        return None
    line_start = text.rfind("\n", 0, index) + 1
    if _LINE_ITEM.match(text, after):
        return index, index + 1
    item = _LIST_ITEM.match(text, line_start)
    if item is not None and after - (index + 1) >= item.end() - line_start:
        return -1, index + 1  # a list item's text wrapped onto a line indented below it
    if _LINE_ITEM.match(text, line_start):
        return index, index + 1
    return -1, index + 1  # a wrapped line inside a paragraph
