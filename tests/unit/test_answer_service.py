"""The answer service every edge asks through: the same answer for the same request, whichever
edge asks, with the answer cache and condensing as the server has them, in one process."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fastapi.testclient import TestClient

from footnote.answer.result import DoneEvent, SourcesEvent
from footnote.application.answers import EMBEDDER, MODEL, AnswerRequest
from footnote.models.base import Message
from footnote.retrieval.source_filter import SourceFilter
from tests.unit.server_fixtures import APPLE_REPLY, RecordingGenerator, ask_body, build

QUESTION = "What do apple trees need?"
TURNS = (Message("user", "Tell me about apple trees."), Message("assistant", "They grow in orchards."))


def test_the_service_answers_as_the_engine_it_builds(tmp_path: Path) -> None:
    _, app = build(tmp_path, [APPLE_REPLY] * 2)
    served = app.answers.ask(AnswerRequest(QUESTION))
    direct = app.answer_engine().ask(QUESTION)
    assert served.to_dict() | {"timings_ms": {}} == direct.to_dict() | {"timings_ms": {}}


def test_the_chat_route_and_the_service_give_one_answer(tmp_path: Path) -> None:
    server, app = build(tmp_path, [APPLE_REPLY] * 2)
    with TestClient(server) as client:
        reply = client.post("/v1/chat/completions", json=ask_body(QUESTION)).json()
    answer = app.answers.ask(AnswerRequest(QUESTION))
    assert reply["choices"][0]["message"]["content"] == answer.text
    described = app.answers.describe(answer.sources)
    assert reply["citations"] == described.citations
    assert [r["snippet"] for r in reply["search_results"]] == [d.snippet for d in described.results]


def test_a_cached_follow_up_is_condensed_first_and_found_by_its_standalone_question(tmp_path: Path) -> None:
    # Calls: condense, answer; the same conversation again: condense only, the answer is cached.
    generator = RecordingGenerator([QUESTION, APPLE_REPLY, QUESTION])
    _, app = build(tmp_path, generator=generator, answer_cache_size=8)
    service = app.answers
    request = AnswerRequest(QUESTION.replace("apple trees", "they"), history=TURNS)
    assert [step.name for step in service.steps(request)] == ["condense", "look up"]
    first = list(service.run(request))
    again = list(service.run(request))
    assert len(generator.calls) == 3 and not generator.replies
    assert isinstance(first[0], SourcesEvent) and isinstance(first[-1], DoneEvent)
    assert again == [first[0], first[-1]]
    assert first[-1].answer.usage.to_dict()["condense"]["calls"] == 1


def test_without_the_cache_the_engine_condenses_and_nothing_is_looked_up(tmp_path: Path) -> None:
    generator = RecordingGenerator([QUESTION, APPLE_REPLY])
    _, app = build(tmp_path, generator=generator)
    request = AnswerRequest(QUESTION.replace("apple trees", "they"), history=TURNS)
    assert app.answers.steps(request) == []  # the engine condenses it, nothing is looked up
    assert app.answers.look_up(request) is None
    answer = app.answers.ask(request)
    assert answer.text and len(generator.calls) == 2


def test_given_sources_are_answered_without_retrieval_or_the_cache(tmp_path: Path) -> None:
    _, app = build(tmp_path, [APPLE_REPLY] * 2, answer_cache_size=8)
    hits = app.search(QUESTION, limit=1)
    request = AnswerRequest(QUESTION, sources=tuple(hits))
    assert app.answers.look_up(request) is None
    answer = app.answers.ask(request)
    assert [hit.chunk_id for hit in answer.sources] == [hit.chunk_id for hit in hits]
    assert (
        app.answers.ask(replace(request, source_filter=SourceFilter.parse(["glaciers"]))).sources
        == answer.sources
    )


def test_the_steps_before_an_answer_are_given_in_one_order(tmp_path: Path) -> None:
    _, cached = build(tmp_path / "cached", [APPLE_REPLY], answer_cache_size=8)
    _, uncached = build(tmp_path / "uncached", [APPLE_REPLY])
    follow_up = AnswerRequest(QUESTION.replace("apple trees", "they"), history=TURNS)
    steps = cached.answers.steps(follow_up)
    assert [(step.name, step.holds) for step in steps] == [("condense", MODEL), ("look up", EMBEDDER)]
    assert [step.name for step in cached.answers.steps(AnswerRequest(QUESTION))] == ["look up"]
    hits = tuple(cached.search(QUESTION, limit=1))
    assert cached.answers.steps(AnswerRequest(QUESTION, sources=hits)) == []
    assert uncached.answers.steps(follow_up) == []


def test_the_server_runs_the_services_steps_without_naming_them() -> None:
    # The order of the steps lives in `AnswerService.steps`; the server only schedules them.
    server = Path(__file__).resolve().parents[2] / "src" / "footnote" / "server"
    named = [
        f"{path.name}: {call}"
        for path in sorted(server.rglob("*.py"))
        for call in (".condensed(", ".look_up(")
        if call in path.read_text(encoding="utf-8")
    ]
    assert not named, named
