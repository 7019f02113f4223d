"""Degenerate text: a generation caught in a loop, and a sentence made of one.

A small model sometimes falls into repeating a short unit ("-cj-cj-cj-cj", "--best --best
--best"). Two signals find it, both over characters and words alone, in any language:

- `loop_length`: the text ends in one unit said again and again, back to back; a generation
  is ended the moment its text does (`cut_loops`).
- `is_degenerate`: a sentence holds such a run anywhere, or a line of it is mostly words that
  line has already said (a listing of function signatures repeats its words across lines, not
  within one).

The thresholds were checked against every sentence of the docqa-dev and squad2-dev documents
(`benchmarks/degenerate_text.py`, retired): none of them is degenerate by these rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# A unit is 2 to 80 characters holding a letter or digit; it loops when said at least
# MIN_REPEATS times back to back over at least MIN_LOOP_CHARS characters.
MIN_UNIT_CHARS = 2
MAX_UNIT_CHARS = 80
MIN_REPEATS = 3
MIN_LOOP_CHARS = 24
# A unit without a letter or digit ("--- | ", "....") loops only over a longer run: a table
# rule or a dotted leader is text, for a while.
MIN_SYMBOL_LOOP_CHARS = 64
# A line of at least this many words is degenerate when fewer than this share are distinct.
MIN_WORDS_FOR_SHARE = 8
MIN_DISTINCT_SHARE = 0.4

_WORD = re.compile(r"\w+")
_RUN = re.compile(rf"(.{{{MIN_UNIT_CHARS},{MAX_UNIT_CHARS}}}?)\1{{{MIN_REPEATS - 1},}}", re.DOTALL)


def loop_length(text: str) -> int:
    """Characters of the loop `text` ends in (0 when it ends in none): the shortest unit that
    the end of `text` repeats back to back enough times to be a loop."""
    for size in range(MIN_UNIT_CHARS, MAX_UNIT_CHARS + 1):
        unit = text[-size:]
        if len(unit) < size:
            break
        repeats = 1
        while text.endswith(unit, 0, len(text) - repeats * size):
            repeats += 1
        if _loops(unit, repeats * size):
            return repeats * size
    return 0


def is_degenerate(sentence: str) -> bool:
    """Whether `sentence` holds a loop anywhere, or a line of it is mostly words it has already said."""
    start = 0
    while (match := _RUN.search(sentence, start)) is not None:
        unit = match.group(1)
        # The run goes on while the text still follows the unit: "--best --best --best" is a loop
        # of "--best " that ends without its last space.
        run = len(match.group())
        while run < len(sentence) - match.start() and sentence[match.start() + run] == unit[run % len(unit)]:
            run += 1
        if _loops(unit, run):
            return True
        start = match.start() + 1
    return any(_mostly_repeats(line) for line in sentence.splitlines())


def cut_loops(pieces: Iterable[str]) -> Iterator[str]:
    """`pieces` as generated, until the text they make ends in a loop: the generation is then
    ended (closed, so a model stops computing), and the looping pieces are still given, so
    that the sentence they end is seen whole and can be judged by `is_degenerate`."""
    stream = iter(pieces)
    tail = ""
    # Long enough for the longest loop that must be seen: MIN_REPEATS of the longest unit, or
    # a symbol run with a unit's worth to spare.
    window = MIN_REPEATS * MAX_UNIT_CHARS + MIN_SYMBOL_LOOP_CHARS
    try:
        for piece in stream:
            yield piece
            tail = (tail + piece)[-window:]
            if loop_length(tail):
                return
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def lowered_words(text: str) -> list[str]:
    """The words of `text` (runs of letters, digits and underscores), lower-cased."""
    return _WORD.findall(text.lower())


def _mostly_repeats(line: str) -> bool:
    words = lowered_words(line)
    return len(words) >= MIN_WORDS_FOR_SHARE and len(set(words)) < MIN_DISTINCT_SHARE * len(words)


def _loops(unit: str, run: int) -> bool:
    """Whether `run` characters of `unit` said back to back are a loop."""
    if run < MIN_REPEATS * len(unit) or unit.isspace():
        return False
    wordy = any(character.isalnum() for character in unit)
    return run >= (MIN_LOOP_CHARS if wordy else MIN_SYMBOL_LOOP_CHARS)
