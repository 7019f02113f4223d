"""The document-set answer evaluation: loading, answer matching, scoring per kind, floors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from footnote.application import create_app
from footnote.config import Settings
from footnote.core.cjk import count_words
from footnote.evaluation.docqa import (
    DocSetError,
    choose_floor,
    contains_answer,
    doc_metrics,
    doc_report,
    evaluate_doc_questions,
    gated,
    is_doc_set,
    load_doc_questions,
    metrics_by_kind,
    points_found,
)
from tests.fakes import HashingEmbedder, ScriptedGenerator

SFTP = """     -B buffer_size
             Specify the size of the buffer that sftp uses when transferring
             files.  The default is 32768 bytes.
"""
ITEMS = [
    {
        "id": "q1",
        "question": "What buffer size does sftp use for transfers unless -B is given?",
        "answers": ["32768 bytes", "32768"],
        "source": "sftp.1.txt",
        "evidence": "The default is 32768 bytes.",
        "kind": "numeric",
    },
    {
        "id": "u1",
        "question": "Which port does sftp connect to by default?",
        "answers": [],
        "source": None,
        "evidence": None,
        "kind": "unanswerable",
    },
]


@pytest.fixture
def doc_set(tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "sftp.1.txt").write_text(SFTP, encoding="utf-8")
    lines = "\n".join(json.dumps(item) for item in ITEMS)
    (folder / "questions.jsonl").write_text(lines + "\n", encoding="utf-8")
    return folder


def test_answers_match_across_case_spacing_and_unicode() -> None:
    assert contains_answer("The default is 32768  BYTES.", ["32768 bytes"])
    assert contains_answer("uses <%- \u2026 %> to escape", ["<%- \u2026 %>"])
    assert contains_answer("the range 61184\u202665519", ["61184...65519"])
    assert not contains_answer("The default is 327680 bytes.", ["32768"])
    assert not contains_answer("anything", [])


def test_a_folder_without_questions_is_refused_with_the_fix(tmp_path: Path) -> None:
    assert not is_doc_set(tmp_path)
    with pytest.raises(DocSetError, match=r"questions\.jsonl"):
        load_doc_questions(tmp_path)


def test_another_questions_file_replaces_the_sets_own(doc_set: Path, tmp_path: Path) -> None:
    own = load_doc_questions(doc_set)
    chosen = tmp_path / "fold.jsonl"
    chosen.write_text((doc_set / "questions.jsonl").read_text(encoding="utf-8").splitlines()[-1] + "\n")

    assert [item.id for item in load_doc_questions(doc_set, questions=chosen)] == [own[-1].id]
    with pytest.raises(DocSetError, match="--questions"):
        load_doc_questions(doc_set, questions=tmp_path / "missing.jsonl")


def test_a_malformed_item_names_its_line(doc_set: Path) -> None:
    (doc_set / "questions.jsonl").write_text('{"id": "q1"}\n', encoding="utf-8")
    with pytest.raises(DocSetError, match="line 1"):
        load_doc_questions(doc_set)


def test_the_set_is_asked_end_to_end_and_scored_per_kind(doc_set: Path, tmp_path: Path) -> None:
    items = load_doc_questions(doc_set)
    assert [item.answerable for item in items] == [True, False]
    settings = Settings(
        home=tmp_path / "home", reader="extract", relevance_floor=0.0, evidence_floor=0.0, reader_floor=0.0
    )
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        app.ingest([doc_set / "corpus"])
        outcomes = evaluate_doc_questions(app.answers, items)
    finally:
        app.close()
    answered, unanswerable = outcomes
    assert answered.correct and answered.correct_cited and answered.right_document
    assert answered.first_sentence_seconds is not None and answered.first_sentence_seconds <= answered.seconds
    assert not unanswerable.abstained  # no gate: the nearest passage is quoted
    metrics = metrics_by_kind(outcomes)
    assert metrics["numeric"]["correct_cited"] == 1.0 and metrics["unanswerable"]["abstention"] == 0.0
    assert metrics["all"]["questions"] == 2 and metrics["all"]["false_abstention"] == 0.0
    report = doc_report(doc_set, 0, settings, outcomes)
    assert report["settings"]["sentence_reader"] == settings.sentence_reader
    assert report["machine"]["cpus"] and "cpu_flags" in report["machine"]  # read beside the latencies


def test_a_floor_is_chosen_for_the_false_abstention_allowed(doc_set: Path, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", reader="extract", relevance_floor=0.0, evidence_floor=0.0)
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        app.ingest([doc_set / "corpus"])
        outcomes = evaluate_doc_questions(app.answers, load_doc_questions(doc_set))
    finally:
        app.close()
    floor = choose_floor(outcomes, "answerability", most_false=0.0)
    assert floor == outcomes[0].answerability
    declined = doc_metrics(gated(outcomes, "answerability", floor + 1e-6))
    assert declined["false_abstention"] == 1.0 and declined["correct"] == 0.0


BROAD = {
    "id": "b1",
    "kind": "summary",
    "question": "Summarize what the sftp manual says about its transfer buffer.",
    "sources": ["sftp.1.txt"],
    "key_points": [["-B buffer_size"], ["32768 BYTES", "32 KiB"], ["the window size"]],
    "min_points": 2,
}


def test_broad_items_are_graded_by_their_key_points(doc_set: Path, tmp_path: Path) -> None:
    broad = tmp_path / "broad.jsonl"
    broad.write_text(json.dumps(BROAD) + "\n", encoding="utf-8")
    (item,) = load_doc_questions(doc_set, questions=broad)
    assert item.answerable and item.sources == ("sftp.1.txt",) and item.min_points == 2
    # Case and spacing aside, in the text or in a citation's quote; a point counts once.
    assert points_found(item, "Use  -b BUFFER_SIZE.", ["The default is 32768 bytes.", "32768 bytes"]) == 2
    settings = Settings(home=tmp_path / "home", reader="extract", relevance_floor=0.0, evidence_floor=0.0)
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    try:
        app.ingest([doc_set / "corpus"])
        (outcome,) = evaluate_doc_questions(app.answers, [item])
    finally:
        app.close()
    assert outcome.key_points == 3 and outcome.points is not None
    assert outcome.complete == (outcome.points >= 2) and outcome.right_document
    assert 0 < outcome.words == count_words(outcome.answer)
    metrics = doc_metrics([outcome])
    assert metrics["key_point_recall"] == round(outcome.points / 3, 4)
    assert metrics["complete"] == float(outcome.complete) and metrics["correct"] is None


def test_a_set_without_a_corpus_asks_about_the_one_given(doc_set: Path, tmp_path: Path) -> None:
    broad = tmp_path / "broad"
    broad.mkdir()
    (broad / "questions.jsonl").write_text(json.dumps(BROAD) + "\n", encoding="utf-8")
    with pytest.raises(DocSetError, match="--corpus"):
        load_doc_questions(broad)
    assert [item.id for item in load_doc_questions(broad, corpus=doc_set / "corpus")] == ["b1"]
