"""A question naming something no document mentions is declined before any scoring or generation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from footnote.answer.prompt import NO_ANSWER
from footnote.answer.terms import named_words
from footnote.application import Application, create_app
from footnote.config import Settings
from tests.fakes import HashingEmbedder, ScriptedGenerator

LIBPNG = """# libpng release notes

Version 1.6.0 reworked the png_set_option() function and the options member of the png struct.
Version 1.6.32 added support for the eXIf chunk, which holds Exif metadata.
"""
SFTP = """     -B buffer_size
             Specify the size of the buffer that sftp uses when transferring
             files.  The default is 32768 bytes.
"""


@pytest.mark.parametrize(
    ("question", "words"),
    [
        (
            "In which Python version was argparse.BooleanOptionalAction added?",
            ["argparse", "BooleanOptionalAction"],
        ),
        ("Which option sets SYSTEMD_OFFLINE or --enable-fat?", ["SYSTEMD", "OFFLINE", "enable", "fat"]),
        ("In which libpng release was APNG support added?", ["APNG"]),
        ("How do I restart NetworkManager?", ["NetworkManager"]),
        # Plain capitalised words are misspelled and paraphrased too often to decline on.
        ("When was Xenoblade Chronicles Definite Edition released?", []),
        ("Which older closure-preparation function is deprecated?", []),  # a compound, not a name
    ],
)
def test_named_words_are_identifiers_options_and_names(question: str, words: list[str]) -> None:
    assert sorted(named_words(question)) == sorted(words)


def test_capitalised_words_count_as_names_only_when_asked() -> None:
    assert named_words("Welche Option setzt den TCP Port von --enable-fat?", names=False) == ["enable", "fat"]
    assert named_words("Welche Option setzt den TCP Port von --enable-fat?") == ["enable", "fat", "TCP"]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "libpng.md").write_text(LIBPNG, encoding="utf-8")
    (folder / "sftp.txt").write_text(SFTP, encoding="utf-8")
    settings = Settings(home=tmp_path / "home", reader="extract", relevance_floor=0.0, evidence_floor=0.0)
    application = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    application.ingest([folder])
    yield application
    application.close()


def test_a_name_no_document_holds_gives_the_no_answer_with_the_nearest_sources(app: Application) -> None:
    answer = app.ask("In which libpng release was APNG (animated PNG) support added?")
    assert answer.abstained and answer.text == NO_ANSWER
    assert answer.unknown_words == ["APNG"] and answer.unrelated
    assert answer.sources and answer.sources[0].path.endswith("libpng.md")
    assert answer.to_dict()["unknown_words"] == ["APNG"]


def test_names_the_documents_hold_are_answered(app: Application) -> None:
    answer = app.ask("In which libpng release was support for the eXIf chunk added?")
    assert not answer.abstained and not answer.unknown_words
    assert "1.6.32" in answer.text


def test_the_check_can_be_switched_off(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "libpng.md").write_text(LIBPNG, encoding="utf-8")
    settings = Settings(
        home=tmp_path / "home",
        reader="extract",
        relevance_floor=0.0,
        evidence_floor=0.0,
        reader_floor=0.0,
        decline_unknown_names=False,
    )
    application = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        application.ingest([folder])
        answer = application.ask("In which libpng release was APNG support added?")
    finally:
        application.close()
    assert not answer.unknown_words and not answer.abstained


def test_given_sources_that_name_the_word_are_read(app: Application) -> None:
    hits = app.search("png options", limit=2)
    named = [replace(hits[0], text=hits[0].text + " APNG support came in 1.6.40."), *hits[1:]]
    answer = app.answer_engine().ask_sources("In which libpng release was APNG support added?", named)
    assert not answer.unknown_words
