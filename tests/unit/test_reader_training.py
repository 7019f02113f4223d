"""Training the sentence reader: examples from SQuAD 2.0's format, and a few steps that learn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from footnote.errors import ConfigError
from footnote.models.sentence_reader import CONTEXT_MARK, reader_input
from footnote.training.reader import training_examples
from footnote.training.reader_data import (
    ReaderExample,
    load_examples,
    open_examples,
    split_by_group,
    squad_examples,
    write_example,
)

PARAGRAPH = (
    "The Fresnel lens was invented by Augustin-Jean Fresnel in 1822. "
    "It replaced the mirrors that lighthouses had used before. "
    "Lighthouse keepers trimmed the wicks every night."
)
OTHER = "Honeybees live in colonies. A colony has one queen. Worker bees gather nectar."


def squad_file(tmp_path: Path) -> Path:
    invented = PARAGRAPH.index("Augustin")
    trimmed = PARAGRAPH.index("trimmed")
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "Lighthouses",
                "paragraphs": [
                    {
                        "context": PARAGRAPH,
                        "qas": [
                            {
                                "id": "a",
                                "question": "Who invented the Fresnel lens?",
                                "answers": [{"text": "Augustin-Jean Fresnel", "answer_start": invented}],
                                "is_impossible": False,
                            },
                            {
                                "id": "b",
                                "question": "Who trimmed the lamps of the Fresnel lens factory?",
                                "answers": [],
                                "plausible_answers": [{"text": "trimmed", "answer_start": trimmed}],
                                "is_impossible": True,
                            },
                        ],
                    }
                ],
            },
            {
                "title": "Honeybees",
                "paragraphs": [
                    {
                        "context": OTHER,
                        "qas": [
                            {
                                "id": "c",
                                "question": "How many queens does a colony have?",
                                "answers": [{"text": "one", "answer_start": OTHER.index("one")}],
                                "is_impossible": False,
                            }
                        ],
                    }
                ],
            },
        ],
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_answer_sentence_is_the_positive_and_the_distractor_a_negative(tmp_path: Path) -> None:
    examples = squad_examples(squad_file(tmp_path))
    answered, unanswerable, bees = examples

    positives = [c for c, label in zip(answered.candidates, answered.labels, strict=True) if label]
    assert positives == [
        reader_input("The Fresnel lens was invented by Augustin-Jean Fresnel in 1822.", "Lighthouses")
    ]
    assert not unanswerable.answerable
    assert any("trimmed the wicks" in c for c in unanswerable.candidates)
    assert {e.group for e in examples} == {"Lighthouses", "Honeybees"}
    assert bees.answerable


def test_a_later_sentence_carries_its_paragraphs_lead_in(tmp_path: Path) -> None:
    (answered, *_) = squad_examples(squad_file(tmp_path))
    later = next(c for c in answered.candidates if c.startswith("It replaced"))

    assert later.split(CONTEXT_MARK)[1].startswith("Lighthouses: The Fresnel lens was invented")


def test_documents_are_split_whole(tmp_path: Path) -> None:
    training, held = split_by_group(squad_examples(squad_file(tmp_path)), ["Honeybees"])

    assert {e.group for e in training} == {"Lighthouses"}
    assert {e.group for e in held} == {"Honeybees"}


def test_examples_written_one_at_a_time_load_back_whole(tmp_path: Path) -> None:
    examples = squad_examples(squad_file(tmp_path))
    path = tmp_path / "made" / "questions.jsonl"
    with open_examples(path, {"pages": ["gzip.1.txt"]}) as out:
        for example in examples:
            write_example(out, example)

    assert load_examples(path) == examples
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0]) == {
        "about": {"pages": ["gzip.1.txt"]}
    }


def test_a_file_that_holds_no_examples_names_the_script_that_makes_them(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text('{"about": {}}\n{"question": "no candidates"}\n', encoding="utf-8")

    with pytest.raises(ConfigError, match=r"scripts/reader_questions\.py"):
        load_examples(path)


def test_a_held_out_document_of_an_extra_file_is_kept_out_of_training(tmp_path: Path) -> None:
    extra = tmp_path / "set.jsonl"
    with open_examples(extra, {"set": "docs"}) as out:
        for group in ("gzip.1.txt", "tar.1.txt"):
            write_example(out, ReaderExample(f"What does {group} do?", ("It packs.",), (1,), group))

    training, held = training_examples(squad_file(tmp_path), ["tar.1.txt", "Honeybees"], [extra], seed=0)

    assert {e.group for e in training} == {"Lighthouses", "gzip.1.txt"}
    assert {e.group for e in held} == {"Honeybees", "tar.1.txt"}


def test_without_squad_the_extra_examples_alone_are_trained_on(tmp_path: Path) -> None:
    extra = tmp_path / "broad.jsonl"
    with open_examples(extra, {"set": "docs"}) as out:
        for group in ("gzip.1.txt", "tar.1.txt"):
            write_example(
                out, ReaderExample(f"Summarise {group}.", ("It packs.", "See also."), (1, 0), group)
            )

    training, held = training_examples(None, ["tar.1.txt"], [extra], seed=0)

    assert [e.group for e in training] == ["gzip.1.txt"]
    assert [e.group for e in held] == ["tar.1.txt"]


def test_extra_only_without_an_extra_file_names_the_fix() -> None:
    from typer.testing import CliRunner

    from footnote.cli.main import app

    result = CliRunner().invoke(app, ["train", "reader", "--extra-only", "--report-only"])

    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError)
    assert "pass at least one --extra FILE" in str(result.exception)
