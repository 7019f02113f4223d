"""Answer evaluation: gold-answer matching, passage labelling, scoring, calibration and the CLI."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from footnote.answer.engine import AnswerEngine
from footnote.answer.prompt import NO_ANSWER
from footnote.application import Application, create_app
from footnote.application.answers import AnswerService
from footnote.config import Settings
from footnote.errors import FootnoteError
from footnote.evaluation.answers import (
    AnswerDatasetError,
    AnswerRecord,
    QuestionOutcome,
    RunResult,
    calibrate_abstention,
    evaluate_run,
    given_passages,
    gold_answers,
    index_passages,
    is_correct,
    load_records,
    passage_path,
)
from tests.fakes import HashingEmbedder, ScriptedGenerator, WordJudge

POSITIVE = "Super Bowl LV was played on February 7, 2021, at Raymond James Stadium in Tampa, Florida."
NEGATIVE = "Super Bowl LVIII tickets are on sale in Las Vegas for the game in February 2024."
LEONARDO = "The Mona Lisa was painted by Leonardo da Vinci in Florence in the early sixteenth century."
RECORD = AnswerRecord("0", "Super Bowl 2021 location", [["Tampa, Florida"]], [POSITIVE], [NEGATIVE])
RGB_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "rgb" / "en_fact.jsonl"


@pytest.fixture
def app(settings: Settings) -> Iterator[Application]:
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    yield app
    app.close()


def answers_with(app: Application, replies: list[str]) -> AnswerService:
    """The application's answer service, its model to reply with `replies`."""
    generator = app.generator
    assert isinstance(generator, ScriptedGenerator)
    generator.replies[:] = replies
    return app.answers


def engine_with(app: Application, replies: list[str]) -> AnswerEngine:
    return replace(app.answer_engine(), generator=ScriptedGenerator(replies))


def test_gold_answers_follow_the_rgb_rule() -> None:
    assert gold_answers("Tampa") == [["Tampa"]]
    assert gold_answers([["May 15 2012", "May 15, 2012"]]) == [["May 15 2012", "May 15, 2012"]]
    assert gold_answers(["a", "b"]) == [["a"], ["b"]]
    assert is_correct("It was held in TAMPA, florida.", [["Tampa, Florida"]])
    assert is_correct("released on May 15, 2012", [["May 15 2012", "May 15, 2012"]])
    assert not is_correct("a only", [["a"], ["b"]])
    assert not is_correct("anything", [])


def test_given_passages_mix_positives_and_negatives_in_a_fixed_order() -> None:
    record = AnswerRecord("7", "q", [["x"]], ["p1", "p2", "p3"], ["n1", "n2", "n3", "n4"])
    hits = given_passages(record, 5, answerable=True)
    assert sorted(hit.text for hit in hits) == ["n1", "n2", "n3", "p1", "p2"]
    assert [hit.text for hit in hits] == [hit.text for hit in given_passages(record, 5, answerable=True)]
    assert {hit.text for hit in given_passages(record, 5, answerable=False)} == {"n1", "n2", "n3", "n4"}
    assert all(hit.path == passage_path(hit.text) for hit in hits)


@pytest.mark.parametrize(
    ("noise", "expected"),
    [
        (0.0, ["p1", "p2", "p3", "n1", "n2"]),  # three positives only: negatives fill the rest
        (0.2, ["p1", "p2", "p3", "n1", "n2"]),
        (0.4, ["p1", "p2", "p3", "n1", "n2"]),
        (0.6, ["p1", "p2", "n1", "n2", "n3"]),
        (0.8, ["p1", "n1", "n2", "n3", "n4"]),
        (0.99, ["p1", "n1", "n2", "n3", "n4"]),  # at least one positive
    ],
)
def test_given_passages_follow_the_noise_rate(noise: float, expected: list[str]) -> None:
    record = AnswerRecord("7", "q", [["x"]], ["p1", "p2", "p3"], ["n1", "n2", "n3", "n4", "n5", "n6"])
    hits = given_passages(record, 5, answerable=True, noise=noise)
    assert sorted(hit.text for hit in hits) == sorted(expected)


def test_given_passages_take_more_positives_when_negatives_run_short() -> None:
    record = AnswerRecord("7", "q", [["x"]], ["p1", "p2", "p3", "p4"], ["n1"])
    hits = given_passages(record, 5, answerable=True, noise=0.6)
    assert sorted(hit.text for hit in hits) == ["n1", "p1", "p2", "p3", "p4"]


def test_load_records_reads_jsonl_and_names_bad_lines(tmp_path: Path) -> None:
    good = {"id": 3, "query": "q", "answer": "a", "positive": ["p"], "negative": ["n"]}
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(good) + "\n", encoding="utf-8")
    assert [r.id for r in load_records(path)] == ["3", "3"]
    assert len(load_records(path, limit=1)) == 1
    numbered = "\n".join(json.dumps({**good, "id": n}) for n in range(5))
    path.write_text(numbered + "\n", encoding="utf-8")
    assert [r.id for r in load_records(path, limit=2, skip=3)] == ["3", "4"]
    assert load_records(path, skip=5) == []
    path.write_text('{"query": "q"}\n', encoding="utf-8")
    with pytest.raises(AnswerDatasetError, match="line 1: records need query, answer and positive"):
        load_records(path)
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(AnswerDatasetError, match="line 1 is not JSON"):
        load_records(path)
    with pytest.raises(AnswerDatasetError, match="is not a file"):
        load_records(tmp_path / "missing.jsonl")


def test_a_copied_positive_sentence_scores_correct_and_precisely_cited(app: Application) -> None:
    answers = answers_with(app, [f"{POSITIVE} [2]"])
    result = evaluate_run(answers, [RECORD], "reading", passages=2)
    outcome = result.outcomes[0]
    assert outcome.correct and not outcome.abstained
    assert outcome.citations == outcome.positive_citations == 1
    metrics = result.metrics()
    assert metrics["correctness"] == 1.0
    assert metrics["citation_precision"] == 1.0
    assert metrics["citation_recall_sentences"] == 1.0
    assert metrics["abstention_accuracy"] is None


def test_a_sentence_citing_the_distractor_lowers_precision(app: Application) -> None:
    answers = answers_with(app, [f"{POSITIVE} {NEGATIVE}"])
    metrics = evaluate_run(answers, [RECORD], "reading", passages=2).metrics()
    assert metrics["citation_precision"] == 0.5
    assert metrics["citation_recall_sentences"] == 0.5
    assert metrics["citation_recall_answers"] == 1.0


def test_the_no_answer_reply_counts_as_abstention(app: Application) -> None:
    answers = answers_with(app, [NO_ANSWER])
    metrics = evaluate_run(answers, [RECORD], "unanswerable").metrics()
    assert metrics["abstention_accuracy"] == 1.0
    assert metrics["correctness"] is None


def test_an_unsupported_reply_falls_back_to_the_best_source_sentence(app: Application) -> None:
    engine = engine_with(app, ["Green cheese is made on the Moon."])
    answer = engine.ask_sources(RECORD.query, given_passages(RECORD, 2, answerable=True))
    assert answer.extracted
    assert answer.sentences[0].flagged
    quoted = answer.sentences[-1]
    assert quoted.text == POSITIVE
    assert quoted.citations[0].quote == POSITIVE
    assert "Tampa, Florida" in answer.text


def test_unsupported_sentences_are_counted_as_written_and_never_as_shown(app: Application) -> None:
    answers = answers_with(app, [f"{POSITIVE} Green cheese is made on the Moon."])
    result = evaluate_run(answers, [RECORD], "reading", passages=2)
    [outcome] = result.outcomes
    assert (outcome.unsupported_written, outcome.unsupported_shown) == (1, 0)
    assert "Green cheese" not in outcome.answer
    metrics = result.metrics()
    assert metrics["unsupported_rate"] == 0.5 and metrics["unsupported_shown"] == 0


def test_a_quote_matching_the_question_too_little_is_not_given_as_the_answer(app: Application) -> None:
    engine = engine_with(app, ["Green cheese is made on the Moon."] * 2)
    hits = given_passages(RECORD, 2, answerable=True)
    quoted = engine.ask_sources(RECORD.query, hits)
    engine = replace(engine, policy=replace(engine.policy, quote_above=quoted.relevance + 0.01))
    withheld = engine.ask_sources(RECORD.query, hits)
    assert quoted.extracted and quoted.citations
    assert not withheld.extracted and withheld.abstained and withheld.citations == []
    # The model's unsupported sentence is kept for inspection, never shown: the answer is declined.
    assert [s.text for s in withheld.unsupported_sentences] == ["Green cheese is made on the Moon."]
    assert withheld.text == NO_ANSWER and "Green cheese" not in withheld.text


def test_a_judge_scores_the_share_of_citations_it_finds_supporting(app: Application) -> None:
    swapped = POSITIVE.replace("was played", "was cancelled")
    answers = answers_with(app, [f"{POSITIVE} {swapped}"])
    judge = WordJudge()
    metrics = evaluate_run(answers, [RECORD], "reading", passages=2, judge=judge).metrics()
    assert metrics["citation_judged"] == 0.5  # the swapped copy is cited by overlap, not entailed
    assert (POSITIVE, swapped) in judge.pairs
    unjudged = evaluate_run(answers_with(app, [POSITIVE]), [RECORD], "reading").metrics()
    assert unjudged["citation_judged"] is None


def test_the_unrelated_run_gives_each_question_anothers_passages(settings: Settings) -> None:
    other = AnswerRecord("1", "Who painted the Mona Lisa?", [["Leonardo"]], [LEONARDO], [])
    floored = settings.model_copy(update={"relevance_floor": 0.3})
    app = create_app(floored, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        result = evaluate_run(app.answers, [RECORD, other], "unrelated", passages=2)
        assert result.metrics()["abstention_accuracy"] == 1.0
        assert result.metrics()["correctness"] is None
        assert all(o.match < 0.3 for o in result.outcomes)
        with pytest.raises(AnswerDatasetError, match="at least 2 questions"):
            evaluate_run(app.answers, [RECORD], "unrelated")
    finally:
        app.close()


def test_end_to_end_retrieves_from_the_pooled_passages(app: Application) -> None:
    report = index_passages(app, [RECORD])
    assert report.summary()["new"] == 2
    answers = answers_with(app, [POSITIVE])
    outcome = evaluate_run(answers, [RECORD], "end_to_end").outcomes[0]
    assert outcome.correct and outcome.positive_citations == 1


def outcome(relevance: float, abstained: bool = False, extracted: bool = False) -> QuestionOutcome:
    return QuestionOutcome(
        "x", "q", "a", True, abstained, 1, 1, 1, 1, 0, 0.1, relevance=relevance, extracted=extracted
    )


def test_calibration_picks_the_threshold_that_separates_the_calibration_half() -> None:
    reading = RunResult("reading", [outcome(r) for r in (0.9, 0.2, 0.8, 0.7, 0.75, 0.3)])
    unanswerable = RunResult("unanswerable", [outcome(r) for r in (0.4, 0.9, 0.5, 0.1, 0.45, 0.6)])
    calibration = calibrate_abstention(reading, unanswerable)
    # Even positions: answerable 0.9, 0.8, 0.75; unanswerable 0.4, 0.5, 0.45 -> between 0.5 and 0.75.
    assert calibration.threshold == pytest.approx(0.625)
    # Odd positions: answerable 0.2, 0.7, 0.3 -> two wrongly withheld; unanswerable 0.9, 0.1, 0.6 -> two.
    assert calibration.held_out_false_abstention == pytest.approx(2 / 3)
    assert calibration.held_out_abstention == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("gate", "field", "other_run"),
    [("support", "support", "unanswerable"), ("relevance", "match", "unrelated")],
)
def test_the_judge_and_relevance_gates_use_their_own_scores(gate: str, field: str, other_run: str) -> None:
    def scored(value: float) -> QuestionOutcome:
        return dataclasses.replace(outcome(0.5), **{field: value})

    reading = RunResult("reading", [scored(s) for s in (0.9, 0.65, 0.8, 0.3)])
    abstaining = RunResult(other_run, [scored(s) for s in (0.2, 0.7, 0.4, 0.1)])
    calibration = calibrate_abstention(reading, abstaining, gate)
    # Even positions: answerable 0.9, 0.8; the other run 0.2, 0.4 -> the midpoint of 0.4 and 0.8.
    assert calibration.gate == gate and calibration.threshold == pytest.approx(0.6)
    # Odd positions: answerable 0.65 kept, 0.3 withheld; the other run 0.7 kept, 0.1 withheld.
    assert calibration.held_out_false_abstention == pytest.approx(0.5)
    assert calibration.held_out_abstention == pytest.approx(0.5)
    # The answers gate sees only the equal relevance of every answer and cannot separate them.
    assert calibrate_abstention(reading, abstaining).threshold == 0.0


def test_the_quote_gate_withholds_only_quoted_answers() -> None:
    reading = RunResult(
        "reading", [outcome(0.2), outcome(0.5, extracted=True), outcome(0.8, extracted=True), outcome(0.3)]
    )
    quoted = [outcome(0.4, extracted=True), outcome(0.55, extracted=True), outcome(0.1, extracted=True)]
    unanswerable = RunResult("unanswerable", [*quoted, outcome(0.7)])
    quotes = calibrate_abstention(reading, unanswerable, "quotes")
    answers = calibrate_abstention(reading, unanswerable, "answers")
    # Calibration half: answerable 0.2 (the model's own, never gated by quotes) and 0.8 (quoted);
    # unanswerable 0.4 and 0.1, both quoted. Withholding quotes under 0.6 separates them fully.
    assert quotes.gate == "quotes" and quotes.threshold == pytest.approx(0.6)
    # Gating every answer cannot: 0.2 is answerable, so the best is a tie won by the lower 0.15.
    assert answers.threshold == pytest.approx(0.15)
    # Held out: 0.55 quoted is withheld, 0.7 (the model's own) is not; 0.5 quoted is wrongly withheld.
    assert quotes.held_out_abstention == pytest.approx(0.5)
    assert quotes.held_out_false_abstention == pytest.approx(0.5)


def test_cli_eval_answers_refuses_an_unknown_run(tmp_path: Path) -> None:
    from footnote.cli.main import app as cli

    path = tmp_path / "set.jsonl"
    record = {"id": 0, "query": "q", "answer": "a", "positive": ["p"], "negative": ["n"]}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "answers", str(path), "--run", "bogus"])
    assert result.exit_code != 0
    assert "unknown --run 'bogus'" in str(result.exception)


@pytest.mark.skipif(not RGB_DATA.is_file(), reason="../shared/data/rgb is not present")
def test_the_shared_rgb_file_loads() -> None:
    records = load_records(RGB_DATA)
    assert len(records) == 100
    assert all(r.query and r.answers and r.positive for r in records)


def test_a_mixed_language_run_is_also_scored_per_language() -> None:
    def outcome(query: str, correct: bool) -> QuestionOutcome:
        return QuestionOutcome("q", query, "a", correct, False, 1, 1, 1, 1, 0, 1.0)

    run = RunResult(
        "reading", [outcome("Who won?", True), outcome("谁赢了？", False), outcome("谁输了？", True)]
    )
    parts = run.by_language()
    assert set(parts) == {"en", "zh"}
    assert parts["en"].metrics()["correctness"] == 1.0 and parts["zh"].metrics()["correctness"] == 0.5
    assert RunResult("reading", [outcome("谁赢了？", True)]).by_language() == {}


def test_a_calibrating_evaluation_answers_on_an_app_built_with_every_gate_off(settings: Settings) -> None:
    from footnote.evaluation.answer_runs import AnswerPlan, evaluate_answers

    plan = AnswerPlan(("reading", "unanswerable"), passages=2, calibrate=True)
    gated = Settings(home=settings.home, reader="sources", **plan.app_settings())
    app = create_app(gated, embedder=HashingEmbedder(), generator=ScriptedGenerator([POSITIVE] * 2))
    try:
        evaluation = evaluate_answers(app, [RECORD], plan)
    finally:
        app.close()
    assert [r.run for r in evaluation.results] == ["reading", "unanswerable"]
    assert evaluation.settings["relevance_floor"] == evaluation.settings["abstain_below"] == 0.0
    assert [c.gate for c in evaluation.calibrations] == ["answers", "quotes"]
    assert not gated.related_questions and not gated.decline_unknown_names
    report = evaluation.to_dict(Path("set.jsonl"), 0)
    assert report["questions"] == 1 and set(report["runs"]) == {"reading", "unanswerable"}
    assert report["machine"]["cpus"] and "cpu_flags" in report["machine"]  # read beside the latencies
    with pytest.raises(FootnoteError, match="--calibrate needs the reading run"):
        AnswerPlan(("reading",), calibrate=True)
