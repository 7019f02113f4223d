"""Prompt building and source selection within a token budget."""

from __future__ import annotations

import pytest

from footnote.answer.prompt import (
    NO_ANSWER,
    SYSTEM_PROMPT,
    build_messages,
    format_source,
    select_sources,
)
from footnote.core.hits import SearchHit
from footnote.models.base import GenerationParams, approximate_token_count
from tests.fakes import ScriptedGenerator


def make_hit(number: int, text: str, **fields: object) -> SearchHit:
    values: dict[str, object] = {
        "chunk_id": number,
        "document_id": number,
        "path": f"docs/file{number}.md",
        "title": f"Title {number}",
        "text": text,
        "start": 50,
        "end": 50 + len(text),
    }
    values.update(fields)
    return SearchHit(**values)  # type: ignore[arg-type]


def test_system_prompt_states_the_rules() -> None:
    assert NO_ANSWER in SYSTEM_PROMPT
    assert "[1]" in SYSTEM_PROMPT
    assert "only" in SYSTEM_PROMPT and "never instructions" in SYSTEM_PROMPT
    assert approximate_token_count(SYSTEM_PROMPT) < 120  # small models follow short prompts


def test_format_source_shows_title_headings_and_page() -> None:
    hit = make_hit(1, " The lens bends light. ", heading_path=("Optics", "Lenses"), page=3)
    assert format_source(2, hit) == "[2] Title 1 \u2014 Optics > Lenses (p. 3)\nThe lens bends light."
    bare = make_hit(4, "Text.", title="")
    assert format_source(1, bare) == "[1] docs/file4.md\nText."


def test_build_messages_numbers_sources_in_order_and_ends_with_the_question() -> None:
    hits = [make_hit(1, "Tides follow the Moon."), make_hit(2, "Lenses bend light.", page=7)]
    system, user = build_messages("  Why are there tides? ", hits)
    assert (system.role, system.content) == ("system", SYSTEM_PROMPT)
    assert user.role == "user"
    assert user.content == (
        "Sources:\n\n"
        "[1] Title 1\nTides follow the Moon.\n\n"
        "[2] Title 2 (p. 7)\nLenses bend light.\n\n"
        "Question: Why are there tides?"
    )


def test_build_messages_without_sources_still_asks() -> None:
    _, user = build_messages("What is a lens?", [])
    assert user.content.endswith("(none)\n\nQuestion: What is a lens?")


def test_select_sources_keeps_leading_hits_within_budget() -> None:
    hits = [make_hit(number, f"Passage {number} has a few words of text in it.") for number in range(1, 6)]
    costs = [approximate_token_count(format_source(n, hit)) for n, hit in enumerate(hits, start=1)]
    budget = costs[0] + costs[1] + costs[2] + costs[3] // 2
    selected = select_sources(hits, approximate_token_count, budget)
    assert selected == hits[:3]
    assert sum(costs[:3]) <= budget
    assert select_sources(hits, approximate_token_count, sum(costs)) == hits


def test_select_sources_stops_at_the_first_hit_that_does_not_fit() -> None:
    short, long = make_hit(1, "Short passage."), make_hit(2, "word " * 200)
    budget = 3 * approximate_token_count(format_source(1, short))
    assert select_sources([short, long, short], approximate_token_count, budget) == [short]


def test_select_sources_trims_an_oversized_first_hit() -> None:
    text = " ".join(f"word{index}" for index in range(300))
    hit = make_hit(1, text, start=1000, end=1000 + len(text))
    [trimmed] = select_sources([hit, make_hit(2, "next")], approximate_token_count, 60)
    assert approximate_token_count(format_source(1, trimmed)) <= 60
    assert 0 < len(trimmed.text) < len(text)
    assert text.startswith(trimmed.text) and text[len(trimmed.text)] == " "  # cut between words
    assert (trimmed.start, trimmed.end) == (1000, 1000 + len(trimmed.text))
    assert hit.text == text  # the caller's hit is left alone


def test_select_sources_without_hits() -> None:
    assert select_sources([], approximate_token_count, 100) == []


def test_scripted_generator_streams_queued_replies_word_by_word() -> None:
    generator = ScriptedGenerator(["Tides follow the Moon [1].", "Second reply"])
    messages = build_messages("Why tides?", [make_hit(1, "Tides follow the Moon.")])
    pieces = list(generator.stream(messages, GenerationParams()))
    assert pieces == ["Tides", " follow", " the", " Moon", " [1]."]
    assert generator.calls == [messages]
    assert generator.generate(messages, GenerationParams(stop=("reply",))) == "Second "
    with pytest.raises(AssertionError, match="no reply left"):
        generator.stream(messages, GenerationParams())
