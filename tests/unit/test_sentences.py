"""Sentence splitting, citation markers and the streaming sentence assembler."""

from __future__ import annotations

import random
import re

import pytest

from footnote.core.sentences import (
    MARKER,
    SentenceAssembler,
    is_line_item,
    split_sentences,
    strip_markers,
)


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


def test_english_sentences_keep_markers_that_follow_the_punctuation() -> None:
    text = "The lens was invented in 1822. [1] It was used in lighthouses.[1][2] Was it bright? Yes!"
    assert sentences(text) == [
        "The lens was invented in 1822. [1]",
        "It was used in lighthouses.[1][2]",
        "Was it bright?",
        "Yes!",
    ]


def test_markers_before_the_punctuation_stay_inside_the_sentence() -> None:
    text = "Tides follow the Moon [2]. Spring tides are larger [1, 2]."
    assert sentences(text) == ["Tides follow the Moon [2].", "Spring tides are larger [1, 2]."]


@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith met Mr. Jones and Mrs. Brown on St. Mary's Road.",
        "Lenses differ, e.g. in focal length, i.e. how far they focus.",
        "It costs 3.5 dollars, or 2.75 euros.",
        "The book is by J. R. R. Tolkien and sold well.",
        "The U.S. Navy bought many lenses.",
        "Spain vs. France ended in a draw.",
        "See Fig. 3 and No. 12 for the numbers.",
        "The answer is approx. three metres.",
        "Visit example.com for details.",
    ],
)
def test_no_split_on_abbreviations_decimals_and_initials(text: str) -> None:
    assert sentences(text) == [text]


def test_etc_ends_a_sentence_when_a_new_one_starts() -> None:
    assert sentences("We bought pears, apples, etc. Then we left.") == [
        "We bought pears, apples, etc.",
        "Then we left.",
    ]


def test_chinese_and_japanese_sentences() -> None:
    assert sentences("潮汐由月球引力引起。大潮发生在新月和满月时。") == [
        "潮汐由月球引力引起。",
        "大潮发生在新月和满月时。",
    ]
    assert sentences("潮汐由月球引力引起[1]。真的吗？是的！") == [
        "潮汐由月球引力引起[1]。",
        "真的吗？",
        "是的！",
    ]
    assert sentences("潮の満ち引きは月の引力で起こる。[1]大潮は満月のときに起こる。") == [
        "潮の満ち引きは月の引力で起こる。[1]",
        "大潮は満月のときに起こる。",
    ]


def test_newlines_end_list_items_headings_and_paragraphs_but_not_wrapped_lines() -> None:
    text = (
        "# Lighthouses\n"
        "The main points are\n"
        "- lenses bend light\n"
        "- beams reach 20 miles\n"
        "In short the lens\nworks well\n\n"
        "A new paragraph"
    )
    assert sentences(text) == [
        "# Lighthouses",
        "The main points are",
        "- lenses bend light",
        "- beams reach 20 miles",
        "In short the lens\nworks well",
        "A new paragraph",
    ]


def test_a_list_item_wrapped_onto_lines_indented_below_its_text_is_one_sentence() -> None:
    text = (
        "* `$SYSTEMD_OFFLINE=[0|1]` - if set to `1`, then `systemctl` will refrain from\n"
        "  talking to PID 1.\n"
        "* `$SYSTEMD_COLORS` - takes a boolean\n"
        "2. 61184...65519 -> UIDs for dynamic users are allocated from this range (see the\n"
        "   `DynamicUser=` documentation).\n"
        "- lenses bend light\n"
        "not indented, so a line of its own"
    )
    assert sentences(text) == [
        "* `$SYSTEMD_OFFLINE=[0|1]` - if set to `1`, then `systemctl` will refrain from\n  talking to PID 1.",
        "* `$SYSTEMD_COLORS` - takes a boolean",
        "2. 61184...65519 -> UIDs for dynamic users are allocated from this range (see the\n"
        "   `DynamicUser=` documentation).",
        "- lenses bend light",
        "not indented, so a line of its own",
    ]


def test_spans_exclude_surrounding_whitespace() -> None:
    text = "  First one.   Second one!\n\n  Third  "
    spans = split_sentences(text)
    assert [text[start:end] for start, end in spans] == ["First one.", "Second one!", "Third"]
    assert split_sentences("   \n ") == []


def test_marker_pattern() -> None:
    assert [m.group() for m in MARKER.finditer("a [1] b [2, 3] c [4][5] d [2020] e [x]")] == [
        "[1]",
        "[2, 3]",
        "[4]",
        "[5]",
    ]


def test_strip_markers_returns_clean_text_and_numbers_in_order() -> None:
    assert strip_markers("The lens was invented in 1822 [2].") == ("The lens was invented in 1822.", [2])
    assert strip_markers("It was used widely.[3][1, 2] ") == ("It was used widely.", [3, 1, 2])
    assert strip_markers("[1] Tides [1-3] rise [2].") == ("Tides rise.", [1, 2, 3])
    assert strip_markers("No markers in [1822] here.") == ("No markers in [1822] here.", [])


def test_is_line_item() -> None:
    assert all(is_line_item(text) for text in ["- a", "* b", "1. c", "12) d", "## e", "| f |", "> g"])
    assert not any(is_line_item(text) for text in ["1822 was a year", "-minus", "#hashtag", "Plain."])


STREAMED_TEXTS = [
    "The lens was invented in 1822. [1] It was used in lighthouses.[1][2] Was it bright? Yes! Dr. Li came.",
    "Tides follow the Moon [2]. Spring tides are larger [1, 2]. It costs 3.5 dollars... Really?! Yes.",
    "潮汐由月球引力引起。[1]大潮发生在新月和满月时[1]。小潮较小！",
    "# Answer\nThe points are:\n- lenses bend light [1]\n- beams reach 20 miles [2]\n\nIn short it\nworks.",
    "- the lens bends\n  light [1]\n- beams reach\n  20 miles [2]\nDone.",
    "J. R. Smith wrote it, e.g. in the U.S. Army manual. See Fig. 2. The end [3]",
]


def stream(text: str, pieces: list[str]) -> tuple[list[str], list[list[str]]]:
    assembler = SentenceAssembler()
    emitted_per_feed = [assembler.feed(piece) for piece in pieces]
    out = [sentence for batch in emitted_per_feed for sentence in batch]
    return [*out, *assembler.finish()], emitted_per_feed


@pytest.mark.parametrize("text", STREAMED_TEXTS)
def test_assembler_fed_token_by_token_matches_split_sentences(text: str) -> None:
    tokens = re.findall(r"\s*\S+|\s+", text)
    characters = list(text)
    rng = random.Random(7)
    chunks: list[str] = []
    position = 0
    while position < len(text):
        size = rng.randint(1, 9)
        chunks.append(text[position : position + size])
        position += size
    for pieces in (tokens, characters, chunks):
        assert "".join(pieces) == text
        assert stream(text, pieces)[0] == sentences(text)


def test_assembler_emits_complete_sentences_before_the_stream_ends() -> None:
    assembler = SentenceAssembler()
    assert assembler.feed("The lens was invented in 1822.") == []
    assert assembler.feed(" [") == []  # could still be this sentence's marker
    assert assembler.feed("1]") == []
    assert assembler.feed(" It was used in lighthouses") == ["The lens was invented in 1822. [1]"]
    assert assembler.feed(".") == []
    assert assembler.finish() == ["It was used in lighthouses."]
    assert assembler.finish() == []  # finish starts over


def test_assembler_streams_long_answers() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(2000))
    pieces = re.findall(r"\s*\S+|\s+", text)
    out, per_feed = stream(text, pieces)
    assert len(out) == 2000
    # All but the last sentence come out while streaming, not at finish.
    assert sum(len(batch) for batch in per_feed) == 1999


def test_numbered_list_items_are_not_cut_after_their_number() -> None:
    text = "1. Andy Murray won the final.\n2. Novak Djokovic lost it.\nThe answer is 1. Then came more."
    assert sentences(text) == [
        "1. Andy Murray won the final.",
        "2. Novak Djokovic lost it.",
        "The answer is 1.",
        "Then came more.",
    ]
    tokens = re.findall(r"\s*\S+|\s+", text)
    assert stream(text, tokens)[0] == sentences(text)
