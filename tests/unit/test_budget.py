"""Context budgeting: rank order, real token counts, a long source trimmed around its match."""

from __future__ import annotations

from footnote.answer.budget import MIN_TRIMMED_TOKENS, pack_sources, trim_around_match
from footnote.answer.prompt import format_source
from footnote.core.hits import SearchHit
from footnote.models.base import approximate_token_count

FILLER = " ".join(f"Filler sentence number {n} talks about gardens and weather." for n in range(40))
ANSWER = "Raymond James Stadium in Tampa hosted Super Bowl LV in 2021."
LONG_TEXT = f"{FILLER} {ANSWER} The halftime show starred The Weeknd. {FILLER}"


def hit(text: str, chunk_id: int = 1, start: int = 100) -> SearchHit:
    return SearchHit(chunk_id, 1, "doc.md", "Doc", text, start, start + len(text))


def test_a_long_source_is_trimmed_around_the_sentence_that_matches() -> None:
    source = hit(LONG_TEXT)
    trimmed = trim_around_match(source, "Where was Super Bowl LV in 2021?", approximate_token_count, 80)
    assert trimmed is not None
    assert ANSWER in trimmed.text
    assert approximate_token_count(format_source(1, trimmed)) <= 80
    # The span still points at the same characters of the document.
    assert trimmed.end - trimmed.start == len(trimmed.text)
    assert LONG_TEXT[trimmed.start - 100 : trimmed.end - 100] == trimmed.text


def test_pack_keeps_rank_order_and_trims_the_first_misfit() -> None:
    short = [hit(f"Short source {n} about stadiums.", chunk_id=n) for n in range(1, 3)]
    long = hit(LONG_TEXT, chunk_id=9)
    budget = sum(approximate_token_count(format_source(n, h)) for n, h in enumerate(short, 1))
    budget += MIN_TRIMMED_TOKENS + 20
    packed = pack_sources(
        [*short, long, hit("never reached", 10)], "Super Bowl LV 2021", approximate_token_count, budget
    )
    assert [h.chunk_id for h in packed] == [1, 2, 9]
    assert ANSWER in packed[2].text and len(packed[2].text) < len(LONG_TEXT)
    used = sum(approximate_token_count(format_source(n, h)) for n, h in enumerate(packed, 1))
    assert used <= budget


def test_pack_drops_a_misfit_when_too_little_room_is_left() -> None:
    first = hit("A first source about stadiums and games.", chunk_id=1)
    budget = approximate_token_count(format_source(1, first)) + MIN_TRIMMED_TOKENS - 1
    assert [
        h.chunk_id for h in pack_sources([first, hit(LONG_TEXT, 2)], "q", approximate_token_count, budget)
    ] == [1]


def test_pack_cuts_an_oversized_first_sentence_to_what_fits() -> None:
    giant = hit("word " * 2000 + "end.")
    packed = pack_sources([giant], "word", approximate_token_count, 60)
    assert len(packed) == 1 and packed[0].text
    assert approximate_token_count(format_source(1, packed[0])) <= 60
