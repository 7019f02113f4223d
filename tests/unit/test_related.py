"""Related questions: parsing the model's list, the grounding and restatement checks, dedup."""

from __future__ import annotations

from pathlib import Path

from footnote.answer.engine import AnswerEngine
from footnote.answer.related import (
    ENOUGH_RELATED,
    MAX_SOURCES_ASKED,
    RELATED_PROMPT,
    candidate_questions,
    filter_related,
    is_well_formed,
    suggest_related,
)
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.models.base import GenerationParams
from tests.fakes import HashingEmbedder, ScriptedGenerator

LENS = (
    "The Fresnel lens was invented by Augustin-Jean Fresnel in 1822. It uses concentric grooves "
    "to bend light. Fresnel lenses were first used in lighthouses on the French coast."
)
TIDES = "Tides are caused by the gravitational pull of the Moon and the Sun."
QUESTION = "Who invented the Fresnel lens?"


def hit(number: int, text: str) -> SearchHit:
    return SearchHit(number, number, f"/docs/{number}.md", f"Doc {number}", text, 0, len(text))


SOURCES = [hit(1, LENS)]


def test_numbered_bulleted_and_labelled_lines_give_bare_questions() -> None:
    reply = (
        "1. Where were Fresnel lenses first used? [1]\n"
        "- How does the lens bend light?\n"
        "Q3: When was the lens invented?   What grooves does it use?\n"
        "Here are some questions for you.\n"
        "  2) Who made it"
    )

    assert candidate_questions(reply) == [
        "Where were Fresnel lenses first used?",
        "How does the lens bend light?",
        "When was the lens invented?",
        "What grooves does it use?",
    ]


def test_only_single_well_formed_questions_pass() -> None:
    assert is_well_formed("Where were Fresnel lenses first used?")
    assert is_well_formed("In which year was the lens invented?")
    assert is_well_formed("Does the lens bend light?")
    assert is_well_formed("菲涅耳透镜最早用在哪里？")
    assert not is_well_formed("Fresnel lenses were first used in lighthouses.")  # not a question
    assert not is_well_formed("Lighthouses?")  # too short
    assert not is_well_formed("The lens bends light, right?")  # no question opening
    assert not is_well_formed("where were the lenses first used?")  # starts in lower case
    assert not is_well_formed("Who made it? When?")  # two questions
    assert not is_well_formed("What " + "lens " * 40 + "?")  # too long


def test_a_question_with_a_word_the_sources_lack_is_dropped() -> None:
    candidates = [
        "Where were Fresnel lenses first used?",
        "How much did the lens cost in Paris?",  # cost, Paris: not in the sources
        "When did Fresnel win the Rumford Medal?",  # the model's own knowledge
    ]

    assert filter_related(candidates, QUESTION, SOURCES) == ["Where were Fresnel lenses first used?"]


def test_grounding_is_against_the_given_sources_only() -> None:
    candidates = ["What causes the tides?", "How does the lens bend light?"]

    assert filter_related(candidates, QUESTION, SOURCES) == ["How does the lens bend light?"]
    assert filter_related(candidates, QUESTION, [hit(1, LENS), hit(2, TIDES)]) == candidates


def test_a_restatement_of_the_asked_question_is_dropped() -> None:
    candidates = [
        "Who invented the Fresnel lens?",
        "Who was it that invented the Fresnel lens?",
        "Which lens did Fresnel invent?",
        "When did Fresnel invent the lens in 1822?",  # adds a number the question lacked
    ]

    assert filter_related(candidates, QUESTION, SOURCES) == ["When did Fresnel invent the lens in 1822?"]


def test_near_duplicates_are_kept_once_in_order() -> None:
    candidates = [
        "How does the lens bend light?",
        "How does the Fresnel lens bend light?",  # 3 of 4 content words shared: a duplicate
        "How does a lens bend the light?",  # the same content words
        "Where were Fresnel lenses first used?",
        "Where were the lenses first used?",  # 3 of 4 shared
    ]

    assert filter_related(candidates, QUESTION, SOURCES) == [
        "How does the lens bend light?",
        "Where were Fresnel lenses first used?",
    ]


def test_at_most_the_limit_is_kept() -> None:
    candidates = [
        "How does the lens bend light?",
        "Where were Fresnel lenses first used?",
        "What does the lens use to bend light?",
        "When were lighthouses on the French coast first lit?",
    ]

    kept = filter_related(candidates, QUESTION, SOURCES, limit=2)

    assert kept == candidates[:2]


def test_each_source_is_asked_in_turn_and_its_list_filtered() -> None:
    first_reply = (
        " Who invented the Fresnel lens?\n"  # the reply continues the "1." the prompt began
        "2. Where were Fresnel lenses first used?\n"
        "3. Who painted the Mona Lisa?\n"
    )
    second_reply = " What causes the tides?\n2. Where were Fresnel lenses first used?"
    generator = ScriptedGenerator([first_reply, second_reply])
    sources = [hit(1, LENS), hit(2, TIDES)]

    # The answer's stop sequences do not apply: "lens" would cut the first reply short.
    related = suggest_related(generator, QUESTION, sources, GenerationParams(stop=("lens",)))

    assert related == ["Where were Fresnel lenses first used?", "What causes the tides?"]
    assert len(generator.calls) == 2
    system, user = generator.calls[0]
    assert system.content == RELATED_PROMPT
    assert LENS in user.content and TIDES not in user.content and user.content.endswith("1.")
    assert TIDES in generator.calls[1][1].content


def test_asking_stops_once_enough_questions_are_kept() -> None:
    reply = (
        " Where were Fresnel lenses first used?\n2. How does the lens bend light?\n"
        "3. Which grooves does the lens use?"
    )
    generator = ScriptedGenerator([reply])

    related = suggest_related(generator, QUESTION, [hit(1, LENS), hit(2, TIDES)], GenerationParams())

    assert len(related) == ENOUGH_RELATED and len(generator.calls) == 1


def test_grounding_is_against_the_sources_asked_about() -> None:
    glaciers = "A glacier is a persistent body of dense ice."
    volcanoes = "A volcano is a rupture in the crust of a planet."
    sources = [hit(1, LENS), hit(2, glaciers), hit(3, volcanoes), hit(4, TIDES)]
    # The replies name the tides, which only the fourth source mentions, and it is never asked.
    generator = ScriptedGenerator([" What causes the tides?", "", " What causes the tides?"])

    related = suggest_related(generator, QUESTION, sources, GenerationParams())

    assert related == [] and len(generator.calls) == MAX_SOURCES_ASKED == 3


def test_nothing_is_asked_without_sources() -> None:
    generator = ScriptedGenerator([])

    assert suggest_related(generator, QUESTION, [], GenerationParams()) == []
    assert generator.calls == []


def test_the_engine_asks_about_cited_sources_first_and_only_when_asked(
    settings: Settings, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "lens.md").write_text(f"# Fresnel lens\n\n{LENS}\n", encoding="utf-8")
    (folder / "tides.md").write_text(f"# Tides\n\n{TIDES}\n", encoding="utf-8")
    answer_reply = "The Fresnel lens was invented by Augustin-Jean Fresnel in 1822. [2]"
    lens_questions = " Where were Fresnel lenses first used?\n2. What causes the tides?"
    tides_questions = " What causes the tides?"
    generator = ScriptedGenerator([answer_reply, answer_reply, lens_questions, tides_questions])
    app = create_app(settings, embedder=HashingEmbedder(), generator=generator)
    try:
        app.ingest([folder])
        plain = app.answer_engine().ask(QUESTION)
        engine = app.answer_engine(related_questions=True)
        assert isinstance(engine, AnswerEngine)
        answer = engine.ask(QUESTION)
    finally:
        app.close()

    assert plain.related_questions == []
    assert [Path(c.path).name for c in answer.citations] == ["lens.md"]
    asked = [call[1].content for call in generator.calls[2:]]
    assert "concentric grooves" in asked[0] and "gravitational" in asked[1]
    # The tides question from the lens source was not grounded then; from the tides source it is.
    assert answer.related_questions == ["Where were Fresnel lenses first used?", "What causes the tides?"]
    assert answer.to_dict()["related_questions"] == answer.related_questions


def test_the_setting_turns_related_questions_on(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", related_questions=True)
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        assert app.answer_engine().policy.related_questions
    finally:
        app.close()
