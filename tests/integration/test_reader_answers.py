"""Answers chosen by the sentence reader, end to end with the real embedder and reader."""

from __future__ import annotations

import pytest

from footnote.answer.render import render_markdown
from footnote.answer.result import DoneEvent, SentenceEvent
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.models.base import Embedder
from tests.store_modes import lasting_settings

pytestmark = pytest.mark.integration

LEVELS = """# Packing tool

## Compression levels

The tool packs files at one of three levels.

| Level | Speed | Size of the result |
|---|---|---|
| 1 | fastest | largest |
| 6 | balanced | medium |
| 9 | slowest | smallest |

Level 6 is used unless another is asked for.
"""

LIGHTHOUSES = """# Lighthouses

## Automation

Lighthouse keepers trimmed the wicks and wound the clockwork every night. Automation replaced
them: the last keeper in Britain left the North Foreland lighthouse in 1998.

## Lenses

The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822. It bent
the light of a single lamp into a beam seen far out at sea.
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Application:
    corpus = tmp_path_factory.mktemp("corpus")
    (corpus / "levels.md").write_text(LEVELS, encoding="utf-8")
    (corpus / "lighthouses.md").write_text(LIGHTHOUSES, encoding="utf-8")
    home = tmp_path_factory.mktemp("home")
    # The reader's floor decides declines here: paraphrased questions share few words with their answer.
    settings = Settings(
        home=home, reader="extract", sentence_reader="footnote", reader_floor=0.1, **lasting_settings(home)
    )
    application = create_app(settings, embedder=real_embedder)
    application.ingest([corpus])
    return application


def test_an_answer_in_a_table_row_cites_that_row(app: Application) -> None:
    answer = app.ask("Which level gives the smallest result?")

    assert not answer.abstained
    quote = answer.citations[0].quote
    assert "| 9 | slowest | smallest |" in quote


def test_a_paraphrased_question_is_answered_from_the_sentence_that_answers(app: Application) -> None:
    answer = app.ask("Who came up with the lens that bends a lamp's light into a beam?")

    assert not answer.abstained
    assert "Augustin-Jean Fresnel" in answer.citations[0].quote


@pytest.mark.xfail(
    strict=True,
    reason="a known miss of the answer head: it weighs Japan's keeper at 0.21 against Britain's 0.57, "
    "above the floor of 0.10 that docqa-dev's folds chose (docs/benchmarks.md, the sentence reader)",
)
def test_a_question_whose_documents_hold_only_a_distractor_is_declined(app: Application) -> None:
    answer = app.ask("In which year did the last lighthouse keeper in Japan leave?")

    assert answer.abstained
    assert answer.sources


def test_streaming_equals_asking_with_the_reader_on(app: Application) -> None:
    question = "Which level gives the smallest result?"
    events = list(app.ask_stream(question))
    streamed = [e.sentence for e in events if isinstance(e, SentenceEvent)]
    done = events[-1]

    assert isinstance(done, DoneEvent)
    assert render_markdown(streamed) == done.answer.text == app.ask(question).text
