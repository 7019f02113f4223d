"""Broad questions answered from several checked passages, end to end with the real embedder,
the shape model over multilingual-e5-small, the sentence reader and the bundled answer model."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.answer.render import render_markdown
from footnote.answer.result import Answer, DoneEvent, SentenceEvent
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.models.base import Embedder
from footnote.models.e5 import engine_missing_reason
from tests.store_modes import lasting_settings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(engine_missing_reason()), reason="multilingual-e5-small needs AVX2"),
]

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"

FRENCH_PRESS = """# Brewing coffee with a French press

## Equipment

You need a French press, a kettle, a grinder and fresh coffee beans.

## Steps

1. Boil fresh water and let it rest for thirty seconds.
2. Grind the beans coarsely, about one tablespoon for each cup.
3. Put the ground coffee into the empty press.
4. Pour the water over the grounds and stir once.
5. Put the lid on and wait four minutes.
6. Press the plunger down slowly and pour the coffee at once.
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Application:
    corpus = tmp_path_factory.mktemp("corpus")
    for document in SAMPLE.iterdir():
        (corpus / document.name).write_bytes(document.read_bytes())
    (corpus / "coffee.md").write_text(FRENCH_PRESS, encoding="utf-8")
    home = tmp_path_factory.mktemp("home")
    application = create_app(Settings(home=home, **lasting_settings(home)), embedder=real_embedder)
    application.ingest([corpus])
    return application


def answered(app: Application, question: str) -> tuple[Answer, list[SentenceEvent]]:
    events = list(app.ask_stream(question))
    done = [e for e in events if isinstance(e, DoneEvent)]
    assert len(done) == 1
    return done[0].answer, [e for e in events if isinstance(e, SentenceEvent)]


def test_a_summary_cites_several_passages_of_the_right_document(app: Application) -> None:
    answer, streamed = answered(app, "Summarize how lighthouses work.")
    assert not answer.abstained and answer.prompt_tokens == 0  # quotes only: nothing generated
    quotes = [c for c in answer.citations if Path(c.path).name == "lighthouses.md"]
    assert len(quotes) >= 3 and len(quotes) == len(answer.citations)
    assert all(s.supported for s in answer.sentences)
    assert answer.text.startswith("- ") and answer.text.count("\n- ") >= 2  # a list of points
    # What was streamed is the answer: each point as soon as it was chosen.
    assert render_markdown([e.sentence for e in streamed]) == answer.text


def test_a_comparison_of_two_documents_cites_both(app: Application) -> None:
    answer, _ = answered(
        app, "Compare how honeybees and lighthouses guide others: what do they have in common?"
    )
    cited = {Path(c.path).name for c in answer.citations}
    assert {"honeybees.txt", "lighthouses.md"} <= cited


def test_a_procedures_steps_come_in_the_sources_order(app: Application) -> None:
    answer, _ = answered(app, "How do I make coffee with a French press, step by step?")
    text = answer.text
    steps = ["Boil fresh water", "Grind the beans", "Pour the water", "wait four minutes"]
    assert all(step in text for step in steps)
    assert [text.index(step) for step in steps] == sorted(text.index(step) for step in steps)


def test_a_single_fact_keeps_its_direct_answer(app: Application) -> None:
    answer, _ = answered(app, "Who invented the Fresnel lens?")
    assert "Fresnel" in answer.text and len(answer.citations) <= 3
