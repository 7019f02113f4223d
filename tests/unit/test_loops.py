"""Degenerate text: loops found at the end of a generation and inside a sentence, a looping
generation ended and never shown, and real writing left alone."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from footnote.answer.result import Answer
from footnote.answer.usage import MeteredGenerator, TokenUsage
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.loops import cut_loops, is_degenerate, loop_length
from footnote.models.base import GenerationParams, Generator, Message
from tests.fakes import HashingEmbedder, ScriptedGenerator

LOOPS = [
    "libjpeg-turbo-jpeg-jpeg-cj-cj-cj-cj-cj-cj-cj-cj",
    "-# --fast --best --best --best --best --best --best",
    "The answer is the answer is the answer is the answer is the answer is",
]
WRITING = [
    "Use -k to keep (don't delete) input files during compression or decompression.",
    "The default is 32768 bytes.",
    "| --- | --- | --- | --- |",
    "-1 --fast, -9 --best: regulate the speed of compression.",
    "The tide rises, the tide falls, and the tide rises again.",
]


@pytest.mark.parametrize("text", LOOPS)
def test_a_loop_is_found_at_the_end_and_inside_a_sentence(text: str) -> None:
    assert loop_length(text) > 0
    assert is_degenerate(text)
    assert is_degenerate(f"{text} and then the model stopped.")


@pytest.mark.parametrize("text", WRITING)
def test_real_writing_is_not_degenerate(text: str) -> None:
    assert loop_length(text) == 0
    assert not is_degenerate(text)


def test_a_line_of_mostly_repeated_words_is_degenerate_but_a_listing_of_distinct_lines_is_not() -> None:
    assert is_degenerate("gzip gzip bzip2 gzip gzip bzip2 gzip gzip bzip2 gzip")
    listing = "\n".join(
        f"void aes{n}_set_key (struct aes{n} ctx *ctx, const uint8 t *key)" for n in (128, 192, 256)
    )
    assert not is_degenerate(listing)


class EndlessGenerator(Generator):
    """Writes one unit for ever, and records whether the stream was closed."""

    name = "endless"

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.closed = False
        self.pieces = 0

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        try:
            yield "Use"
            while True:
                self.pieces += 1
                yield self.unit
        finally:
            self.closed = True


def test_a_generation_that_loops_is_ended_and_closed() -> None:
    generator = EndlessGenerator(" --best")
    pieces = list(cut_loops(generator.stream([], GenerationParams())))
    assert generator.closed and generator.pieces < 10
    assert "".join(pieces).endswith("--best --best --best")


def test_every_model_call_of_an_answer_is_cut_when_it_loops() -> None:
    generator = EndlessGenerator(" -cj")
    metered = MeteredGenerator(generator, TokenUsage(), "answer")
    text = metered.generate([Message("user", "q")], GenerationParams(max_tokens=10_000))
    assert generator.closed and len(text) < 100


def answered_with(settings: Settings, tmp_path: Path, document: str, reply: str, question: str) -> Answer:
    """The answer to `question` over one document, the model (reading whole sources) replying `reply`."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "doc.md").write_text(document, encoding="utf-8")
    app = create_app(
        settings.model_copy(update={"reader": "sources"}),
        embedder=HashingEmbedder(),
        generator=ScriptedGenerator([reply]),
    )
    try:
        app.ingest([folder])
        return app.answer_engine().ask(question)
    finally:
        app.close()


def test_a_looping_answer_is_cut_and_its_loop_never_shown(settings: Settings, tmp_path: Path) -> None:
    document = "# gzip\n\nUse -k to keep input files during compression or decompression.\n"
    loop = " --best" * 40
    answer = answered_with(
        settings,
        tmp_path,
        document,
        f"Use -k to keep input files [1].{loop}",
        "Which option keeps input files?",
    )
    assert "--best --best" not in answer.text
    assert not any(is_degenerate(sentence.text) for sentence in answer.sentences)
    assert "-k" in answer.text and answer.citations


def test_a_marker_the_model_puts_inside_a_repeated_line_does_not_hide_it(
    settings: Settings, tmp_path: Path
) -> None:
    document = "# timers\n\nTimers do not expire at the precise time configured, as AccuracySec= applies.\n"
    reply = "Systemd-system.timer:\n[1] SystemD.TIMER(5) systemd.timer SYSTEMD.TIMER(5)\nThe accuracy is"
    answer = answered_with(settings, tmp_path, document, reply, "How precise is a timer?")
    assert "SYSTEMD.TIMER(5)" not in answer.text
    assert not any(is_degenerate(sentence.text) for sentence in answer.sentences)
