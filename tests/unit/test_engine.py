"""Answering end to end on real SQLite and Chroma, with the hashing embedder and a scripted LLM."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest

from footnote.answer import sentence_spans
from footnote.answer.answering import MAX_QUESTION_CHARS
from footnote.answer.citations import SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.history import Standalone
from footnote.answer.policy import EXTRACT_READER, AnswerPolicy
from footnote.answer.prompt import NO_ANSWER, SYSTEM_PROMPT
from footnote.answer.result import Answer, AnswerEvent, DoneEvent, SentenceEvent, SourcesEvent, TokenEvent
from footnote.answer.streaming import final
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.errors import QueryError
from footnote.models.base import Message
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE, Reading, SentenceReader
from footnote.retrieval.retriever import RetrievalParams
from tests.fakes import HashingEmbedder, ScriptedGenerator

FRESNEL_MD = """# Fresnel lens

The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822. It uses \
concentric grooves to bend light, so it is thinner than a conventional lens.

## Lighthouses

Fresnel lenses were first used in lighthouses, where a beam could be seen more than 20 miles out to sea.
"""
TIDES_MD = """# Tides

Tides are the regular rise and fall of sea level caused by the gravitational pull of the Moon and \
the Sun. Spring tides occur at new moon and full moon.
"""
QUESTION = "Who invented the Fresnel lens?"
COPIED = "The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822."
FABRICATED = "The lens was carved from green cheese by Napoleon in 1950."
REPLY = f"{COPIED} [1] {FABRICATED} [1]"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fresnel.md").write_text(FRESNEL_MD, encoding="utf-8")
    (folder / "tides.md").write_text(TIDES_MD, encoding="utf-8")
    return folder


@pytest.fixture
def generator() -> ScriptedGenerator:
    return ScriptedGenerator([REPLY])


@pytest.fixture
def app(settings: Settings, corpus: Path, generator: ScriptedGenerator) -> Iterator[Application]:
    app = create_app(settings, embedder=HashingEmbedder(), generator=generator)
    report = app.ingest([corpus])
    assert report.summary()["new"] == 2 and not report.failed
    yield app
    app.close()


@pytest.fixture
def empty_app(settings: Settings) -> Iterator[Application]:
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    yield app
    app.close()


def answer_of(events: list[AnswerEvent]) -> Answer:
    last = events[-1]
    assert isinstance(last, DoneEvent)
    return last.answer


def test_a_copied_sentence_is_cited_verbatim(app: Application) -> None:
    answer = answer_of(list(app.ask_stream(QUESTION)))

    copied = answer.sentences[0]
    assert copied.text == COPIED
    assert copied.supported and not copied.flagged
    assert len(copied.citations) == 1
    citation = copied.citations[0]
    source = answer.sources[citation.number - 1]
    assert citation.chunk_id == source.chunk_id
    assert citation.quote == COPIED
    assert citation.quote in source.text
    chunk = app.catalog.chunks([citation.chunk_id])[citation.chunk_id]
    assert citation.quote in chunk.text
    assert app.catalog.document_text(citation.document_id)[citation.start : citation.end] == citation.quote
    assert citation.path == str((app.settings.home.parent / "docs" / "fresnel.md").resolve())


def test_a_fabricated_sentence_is_flagged_and_left_out(app: Application) -> None:
    answer = app.ask(QUESTION)

    fabricated = answer.sentences[1]
    assert fabricated.text == FABRICATED
    assert fabricated.flagged
    assert not fabricated.supported
    assert fabricated.citations == []
    assert fabricated.model_markers == [1]  # the model's marker was not trusted
    assert answer.citations == answer.sentences[0].citations
    assert not answer.abstained
    # Kept for inspection, never shown as the answer.
    assert answer.shown_sentences == answer.sentences[:1]
    assert answer.unsupported_sentences == [fabricated]
    assert answer.text == f"{COPIED[:-1]} [1]."
    assert answer.raw_text == REPLY


def test_events_come_in_order_and_sentences_arrive_while_streaming(app: Application) -> None:
    events = list(app.ask_stream(QUESTION))

    kinds = [type(event) for event in events]
    assert kinds[0] is SourcesEvent
    assert kinds[-1] is DoneEvent
    assert set(kinds[1:-1]) == {TokenEvent, SentenceEvent}
    assert kinds[1] is TokenEvent
    token_at = [i for i, kind in enumerate(kinds) if kind is TokenEvent]
    sentence_at = [i for i, kind in enumerate(kinds) if kind is SentenceEvent]
    assert len(sentence_at) == 1  # the fabricated sentence is never sent
    # The first sentence is checked and sent while tokens are still streaming.
    assert sentence_at[0] < token_at[-1]

    answer = answer_of(events)
    sentence_events = [e for e in events if isinstance(e, SentenceEvent)]
    assert [e.index for e in sentence_events] == [0]
    assert [e.sentence for e in sentence_events] == answer.shown_sentences
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == answer.raw_text
    first = events[0]
    assert isinstance(first, SourcesEvent)
    assert first.sources == answer.sources


def test_ask_returns_the_answer_of_the_stream(settings: Settings, corpus: Path) -> None:
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([REPLY, REPLY]))
    try:
        app.ingest([corpus])
        streamed = answer_of(list(app.ask_stream(QUESTION)))
        asked = app.ask(QUESTION)
    finally:
        app.close()

    assert asked.text == streamed.text
    assert asked.sources == streamed.sources
    assert asked.model == "scripted"


def test_the_prompt_holds_the_numbered_sources_and_the_question(
    app: Application, generator: ScriptedGenerator
) -> None:
    answer = app.ask(QUESTION)

    assert len(generator.calls) == 1
    system, user = generator.calls[0]
    assert (system.role, system.content) == ("system", SYSTEM_PROMPT)
    assert user.role == "user"
    assert user.content.startswith("Sources:\n\n[1] Fresnel lens\n")
    assert user.content.endswith(f"Question: {QUESTION}")
    assert len(answer.sources) == 3
    positions = []
    for number, source in enumerate(answer.sources, start=1):
        assert f"[{number}] {source.title}" in user.content
        assert source.text.strip() in user.content
        positions.append(user.content.index(f"[{number}] {source.title}"))
    assert positions == sorted(positions)
    assert "[4]" not in user.content


def test_to_dict_is_json_with_answer_citations_and_sources(app: Application) -> None:
    answer = app.ask(QUESTION)

    data = json.loads(json.dumps(answer.to_dict()))

    assert data["question"] == QUESTION
    assert data["answer"] == answer.text
    assert data["abstained"] is False
    assert [c["quote"] for c in data["citations"]] == [COPIED]
    assert data["citations"][0]["number"] == 1
    assert [s["number"] for s in data["sources"]] == [1, 2, 3]
    assert data["sources"][0]["heading_path"] == ["Fresnel lens"]
    assert data["sources"][0]["text"] == answer.sources[0].text
    assert [s["flagged"] for s in data["sentences"]] == [False]
    assert [s["citations"] for s in data["sentences"]] == [[1]]
    assert [(s["text"], s["flagged"]) for s in data["unsupported_sentences"]] == [(FABRICATED, True)]


@pytest.mark.parametrize("question", ["", "   ", "\n\t "])
def test_an_empty_question_is_refused(app: Application, generator: ScriptedGenerator, question: str) -> None:
    with pytest.raises(QueryError, match="empty"):
        list(app.ask_stream(question))
    assert generator.calls == []


def test_a_very_long_question_is_refused(app: Application, generator: ScriptedGenerator) -> None:
    question = "lens " * 4_000  # 20,000 characters

    with pytest.raises(QueryError, match=f"keep it under {MAX_QUESTION_CHARS:,}"):
        app.ask(question)
    assert generator.calls == []


def test_an_empty_index_gives_no_answer_without_calling_the_model(empty_app: Application) -> None:
    events = list(empty_app.ask_stream(QUESTION))

    assert [type(event) for event in events] == [SourcesEvent, DoneEvent]
    answer = answer_of(events)
    assert answer.text == NO_ANSWER
    assert answer.citations == []
    assert answer.sources == []
    assert answer.abstained
    generator = empty_app.generator
    assert isinstance(generator, ScriptedGenerator)
    assert generator.calls == []
    assert json.loads(json.dumps(answer.to_dict()))["citations"] == []


def test_sources_about_something_else_give_no_answer_without_calling_the_model(app: Application) -> None:
    engine = app.answer_engine()
    engine = replace(engine, policy=replace(engine.policy, relevance_floor=0.3))
    answer = engine.ask("Which violinist recorded the Goldberg variations on a harpsichord?")

    assert answer.unrelated and answer.abstained and answer.match < 0.3
    assert answer.text == NO_ANSWER and answer.sentences == [] and answer.citations == []
    assert answer.sources  # the nearest sources are still shown
    generator = app.generator
    assert isinstance(generator, ScriptedGenerator) and generator.calls == []
    data = answer.to_dict()
    assert data["unrelated"] is True and data["abstained"] is True


def test_sources_about_the_question_pass_the_relevance_floor(app: Application) -> None:
    engine = app.answer_engine()
    engine = replace(engine, policy=replace(engine.policy, relevance_floor=0.3))
    answer = engine.ask(QUESTION)
    assert not answer.unrelated and answer.match >= 0.3
    assert answer.sentences[0].text == COPIED and answer.sentences[0].supported


def test_reingesting_unchanged_files_embeds_nothing(app: Application, corpus: Path) -> None:
    report = app.ingest([corpus])

    assert report.summary()["unchanged"] == 2
    assert report.chunks_embedded == 0
    assert app.vectors.count() == app.catalog.count_chunks()


def test_every_chunk_keeps_its_vector_after_a_file_changes(app: Application, corpus: Path) -> None:
    (corpus / "tides.md").write_text("# Tides\n\nNeap tides have the smallest range.\n", encoding="utf-8")
    assert app.ingest([corpus]).summary()["changed"] == 1

    app.ingest([corpus])  # nothing changed; only tombstones are reconciled

    assert app.vectors.count() == app.catalog.count_chunks()
    dense = app.search("Neap tides have the smallest range", mode="dense")
    assert any("Neap tides" in hit.text for hit in dense)


def test_a_model_repeating_itself_is_cut_off_at_the_first_repeat(settings: Settings, corpus: Path) -> None:
    loop = "The sources say:\n\n" + "\n\n".join(f"[{n}] {COPIED}" for n in range(1, 30))
    generator = ScriptedGenerator([loop])
    app = create_app(settings, embedder=HashingEmbedder(), generator=generator)
    try:
        app.ingest([corpus])
        events = list(app.ask_stream(QUESTION))
    finally:
        app.close()
    answer = answer_of(events)
    assert [s.text for s in answer.sentences] == ["The sources say:", COPIED]
    assert not answer.sentences[0].is_claim and not answer.sentences[0].flagged
    assert answer.sentences[1].supported
    streamed = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert len(streamed) < len(loop) // 5  # generation stopped, not run to the end


def test_the_abstention_thresholds_come_from_the_settings(tmp_path: Path) -> None:
    from footnote.answer.policy import ABSTAIN_BELOW, QUOTE_ABOVE

    defaults = Settings(home=tmp_path / "a")
    assert (defaults.abstain_below, defaults.quote_above) == (ABSTAIN_BELOW, QUOTE_ABOVE)
    app = create_app(
        Settings(home=tmp_path / "b", abstain_below=0.3, quote_above=0.6),
        embedder=HashingEmbedder(),
        generator=ScriptedGenerator([]),
    )
    try:
        engine = app.answer_engine()
    finally:
        app.close()
    assert (engine.policy.abstain_below, engine.policy.quote_above) == (0.3, 0.6)


def test_an_engine_built_directly_has_the_settings_floors(app: Application) -> None:
    engine = AnswerEngine(app.retriever(), app.generator, SupportModels(app.embedder))
    defaults = Settings.model_fields
    assert engine.policy.relevance_floor == defaults["relevance_floor"].default > 0
    assert engine.policy.evidence_floor == defaults["evidence_floor"].default > 0


def test_an_engine_is_never_changed_another_policy_is_another_engine(app: Application) -> None:
    engine = app.answer_engine()
    with pytest.raises(FrozenInstanceError):
        engine.policy = replace(engine.policy, relevance_floor=0.9)  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        engine.policy.relevance_floor = 0.9  # type: ignore[misc]
    strict = replace(engine, policy=replace(engine.policy, relevance_floor=0.99))
    assert strict.ask(QUESTION).unrelated
    assert engine.policy.relevance_floor == app.settings.relevance_floor


def test_a_judge_turns_the_extractive_fallback_off(settings: Settings) -> None:
    params = RetrievalParams()
    assert AnswerPolicy.from_settings(settings, params).extract_fallback
    judged = AnswerPolicy.from_settings(
        settings.model_copy(update={"judge_threshold": 0.8}), params, judged=True
    )
    assert not judged.extract_fallback and judged.judge_threshold == 0.8


class MarkerReader(SentenceReader):
    """A reader sure that only candidates holding `marker` answer; records what it read."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.seen: list[str] = []

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        self.seen.extend(candidates)
        return Reading([30.0 if self.marker in candidate else -30.0 for candidate in candidates])


def test_the_sentence_reader_joins_the_choice_of_the_quote(app: Application) -> None:
    extract = replace(app.answer_engine().policy, reader=EXTRACT_READER)
    blend = AnswerEngine(app.retriever(), app.generator, SupportModels(app.embedder), extract)
    reader = MarkerReader("in 1822")
    read = AnswerEngine(app.retriever(), app.generator, SupportModels(app.embedder, reader=reader), extract)
    question = "Where were Fresnel lenses used first?"

    assert "in 1822" not in blend.ask(question).citations[0].quote
    answer = read.ask(question)
    assert "in 1822" in answer.citations[0].quote
    # It read every sentence of the retrieved chunks, not a shortlist the blend chose.
    assert len(reader.seen) == len(sentence_spans.sentence_spans(answer.sources))


class QuestionRecorder(MarkerReader):
    """A MarkerReader that records the questions it was asked to read for."""

    def __init__(self, marker: str) -> None:
        super().__init__(marker)
        self.questions: set[str] = set()

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        self.questions.add(question)
        return super().read_batch(question, candidates)


def test_a_follow_up_searched_after_the_last_question_is_read_with_it(app: Application) -> None:
    extract = replace(app.answer_engine().policy, reader=EXTRACT_READER)
    reader = QuestionRecorder("in 1822")
    engine = AnswerEngine(app.retriever(), app.generator, SupportModels(app.embedder, reader=reader), extract)
    first = "Tell me about Fresnel lenses."
    history = [Message("user", first), Message("assistant", "They are thin lenses [1].")]
    follow_up = "Where were they used first?"
    in_context = f"{first} {follow_up}"
    answer = final(engine.stream(follow_up, history, standalone=Standalone(follow_up, in_context)))
    # The reader weighs the sentences against what the follow-up leaves out; the answer is the
    # follow-up's own.
    assert reader.questions == {in_context}
    assert answer.citations and answer.question == follow_up
    reader.questions.clear()
    final(engine.stream("Where were Fresnel lenses used first?"))
    assert reader.questions == {"Where were Fresnel lenses used first?"}


class NoAnswerReader(MarkerReader):
    """A reader trained with the no-answer candidate: it scores that candidate at `no_answer`."""

    no_answer = True

    def __init__(self, marker: str, no_answer: float) -> None:
        super().__init__(marker)
        self.unanswered = no_answer

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        scores = super().read_batch(question, candidates).scores
        return Reading(
            [
                self.unanswered if candidate == NO_ANSWER_CANDIDATE else score
                for candidate, score in zip(candidates, scores, strict=True)
            ]
        )


def test_a_reader_with_the_no_answer_candidate_declines_when_it_outscores_the_sentences(
    app: Application,
) -> None:
    policy = replace(app.answer_engine().policy, reader=EXTRACT_READER, reader_floor=0.5)
    question = "Where were Fresnel lenses used first?"

    def ask(no_answer: float) -> tuple[bool, list[str]]:
        reader = NoAnswerReader("in 1822", no_answer)
        engine = AnswerEngine(
            app.retriever(), app.generator, SupportModels(app.embedder, reader=reader), policy
        )
        answer = engine.ask(question)
        return answer.unrelated, reader.seen

    declined, read = ask(no_answer=40.0)
    answered, _ = ask(no_answer=0.0)

    assert declined and not answered
    assert read.count(NO_ANSWER_CANDIDATE) == 1  # scored once, beside every sentence


class MarkersReader(SentenceReader):
    """A reader sure that candidates holding one of `markers` answer, and of nothing else."""

    def __init__(self, *markers: str) -> None:
        self.markers = markers

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        return Reading(
            [30.0 if any(m in candidate for m in self.markers) else -30.0 for candidate in candidates]
        )


def test_a_passage_of_the_same_document_nearly_as_likely_is_quoted_beside_the_best(app: Application) -> None:
    extract = replace(app.answer_engine().policy, reader=EXTRACT_READER)
    question = "Fresnel?"

    def quotes(reader: SentenceReader) -> list[str]:
        engine = AnswerEngine(
            app.retriever(), app.generator, SupportModels(app.embedder, reader=reader), extract
        )
        return [c.quote for c in engine.ask(question).citations]

    both = quotes(MarkersReader("in 1822", "in lighthouses"))
    assert len(both) == 2
    assert any("in 1822" in q for q in both) and any("in lighthouses" in q for q in both)
    assert len(quotes(MarkersReader("in 1822"))) == 1


def test_a_second_passage_from_another_document_is_not_quoted(app: Application) -> None:
    extract = replace(app.answer_engine().policy, reader=EXTRACT_READER)
    reader = MarkersReader("in 1822", "Spring tides")
    engine = AnswerEngine(app.retriever(), app.generator, SupportModels(app.embedder, reader=reader), extract)
    answer = engine.ask("What happens at new moon, and when was the Fresnel lens invented?")
    assert len({c.path for c in answer.citations}) == 1
