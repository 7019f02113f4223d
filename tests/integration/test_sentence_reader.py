"""footnote's sentence reader: pinned weights, and a model that reads for the answer."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from footnote.errors import ModelError, ModelIntegrityError
from footnote.models import sentence_reader
from footnote.models.registry import READER_FILES, READER_FOLDER, REGISTRY, resolve_registered
from footnote.models.sentence_reader import (
    NO_ANSWER_CANDIDATE,
    OnnxSentenceReader,
    bundled_reader_files,
    open_sentence_reader,
    reader_input,
)
from footnote.training.reader_data import ReaderExample
from footnote.training.reader_export import export_reader
from footnote.training.reader_fit import FitParams, fit_reader, read_back, save_weights, score_examples

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def reader() -> OnnxSentenceReader:
    return OnnxSentenceReader(bundled_reader_files())


def test_every_shipped_file_is_pinned() -> None:
    assert set(READER_FILES) == {"model.onnx", "tokenizer.json", "reader.json"}
    assert set(READER_FILES) == {path.name for path in READER_FOLDER.iterdir()}


def test_a_tampered_reader_is_refused_with_both_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "reader"
    shutil.copytree(READER_FOLDER, copy)
    graph = copy / "model.onnx"
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    monkeypatch.setattr(sentence_reader, "READER_FOLDER", copy)

    with pytest.raises(ModelIntegrityError) as refused:
        open_sentence_reader("footnote")

    assert READER_FILES["model.onnx"] in str(refused.value)
    assert refused.value.actual in str(refused.value)
    assert refused.value.actual != READER_FILES["model.onnx"]


def test_off_opens_nothing_and_a_folder_without_a_reader_is_an_error(tmp_path: Path) -> None:
    assert open_sentence_reader("off") is None
    with pytest.raises(ModelError, match="FOOTNOTE_SENTENCE_READER"):
        open_sentence_reader(str(tmp_path))


def test_the_answering_sentence_outscores_one_that_only_shares_words(reader: OnnxSentenceReader) -> None:
    question = "Who invented the Fresnel lens?"
    answering = reader_input(
        "It was invented by the French physicist Augustin-Jean Fresnel in 1822.", "Lighthouses"
    )
    resembling = reader_input("The Fresnel lens is still used in lighthouses today.", "Lighthouses")

    answers, resembles = reader.score(question, [answering, resembling])

    assert answers > resembles


def test_a_sentence_holding_a_number_answers_how_many(reader: OnnxSentenceReader) -> None:
    question = "How many eggs can a queen bee lay in a day?"
    candidates = [
        reader_input("Worker bees collect nectar and pollen from flowers.", "Honeybees"),
        reader_input("A queen can lay up to 2,000 eggs in a single day.", "Honeybees"),
        reader_input("The queen is the only fertile female in the colony.", "Honeybees"),
    ]

    scores = reader.score(question, candidates)

    assert max(range(3), key=scores.__getitem__) == 1


def test_scores_do_not_depend_on_the_batch(reader: OnnxSentenceReader) -> None:
    question = "Which option keeps the input files?"
    alone = reader.score(question, [reader_input("-k, --keep  Keep (don't delete) input files.", "gzip")])
    batched = reader.score(
        question,
        [
            reader_input("-k, --keep  Keep (don't delete) input files.", "gzip"),
            reader_input("x " * 200, "long"),
        ],
    )

    # int8 activations take one scale from the whole batch: a 200-token candidate beside a short
    # one moves its logit by about 0.33 (the reader batches candidates of similar length).
    assert batched[0] == pytest.approx(alone[0], abs=0.4)


TINY_EXAMPLES = [
    ReaderExample(
        "Who invented the Fresnel lens?",
        (
            reader_input("Augustin-Jean Fresnel invented it in 1822.", "Lenses"),
            reader_input("Lighthouses burned whale oil.", "Lenses"),
            reader_input("Keepers trimmed the wicks.", "Lenses"),
        ),
        (1, 0, 0),
        "lenses",
    ),
    ReaderExample(
        "How many queens does a colony have?",
        (
            reader_input("Worker bees gather nectar.", "Bees"),
            reader_input("A colony has one queen.", "Bees"),
        ),
        (0, 1),
        "bees",
    ),
]


@pytest.mark.integration
def test_a_few_training_steps_lower_the_loss() -> None:
    base = resolve_registered(REGISTRY["minilm-l6"])
    params = FitParams(epochs=12, pairs_per_step=5, learning_rate=2e-4, warmup=0.0)

    _model, losses = fit_reader(TINY_EXAMPLES, base, params)

    assert len(losses) == 12
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3


@pytest.mark.integration
def test_training_continued_from_a_checkpoint_starts_where_it_stopped(tmp_path: Path) -> None:
    base = resolve_registered(REGISTRY["minilm-l6"])
    params = FitParams(epochs=12, pairs_per_step=5, learning_rate=2e-4, warmup=0.0)
    model, losses = fit_reader(TINY_EXAMPLES, base, params)
    checkpoint = tmp_path / "reader.pt"
    save_weights(model, checkpoint)

    _again, continued = fit_reader(TINY_EXAMPLES, base, replace(params, epochs=2, start=str(checkpoint)))
    _fresh, restarted = fit_reader(TINY_EXAMPLES, base, replace(params, epochs=2))

    assert continued[0] < restarted[0]
    assert continued[0] < losses[0]


def test_the_shipped_reader_read_back_scores_as_its_graph(reader: OnnxSentenceReader) -> None:
    base = resolve_registered(REGISTRY["minilm-l6"])
    model = read_back(bundled_reader_files().graph, base)

    read_back_scores = score_examples(model, base, TINY_EXAMPLES)
    graph_scores = [reader.score(e.question, e.candidates) for e in TINY_EXAMPLES]

    for ours, shipped in zip(read_back_scores, graph_scores, strict=True):
        # The graph quantizes activations too: its logits stray from float weights' by up to 1.0.
        assert ours == pytest.approx(shipped, abs=1.0)
        assert ours.index(max(ours)) == shipped.index(max(shipped))


def test_training_continued_from_the_shipped_reader_starts_from_what_it_knows() -> None:
    base = resolve_registered(REGISTRY["minilm-l6"])
    params = FitParams(epochs=1, pairs_per_step=5, learning_rate=2e-5, warmup=0.0, answer_head=True)

    _shipped, continued = fit_reader(TINY_EXAMPLES, base, replace(params, start="footnote"))
    _fresh, started = fit_reader(TINY_EXAMPLES, base, params)

    assert continued[0] < started[0]
    with pytest.raises(ModelError, match="--answer-head"):
        fit_reader(TINY_EXAMPLES, base, replace(params, start="footnote", answer_head=False))


UNANSWERED = ReaderExample(
    "How many legs does a queen bee have?",
    (reader_input("Worker bees gather nectar.", "Bees"), reader_input("A colony has one queen.", "Bees")),
    (0, 0),
    "bees",
)


def test_the_no_answer_candidate_is_the_target_of_an_unanswerable_question() -> None:
    import torch

    from footnote.training.reader_fit import _loss

    answered, unanswered = TINY_EXAMPLES[1], UNANSWERED
    # Logits of [sentence, sentence, no answer] for each question, the no-answer candidate last.
    right = torch.tensor([-2.0, 3.0, -3.0, -2.0, -2.0, 3.0])
    wrong = torch.tensor([-2.0, 3.0, 3.0, -2.0, 3.0, -3.0])

    with_it = [float(_loss(x, [answered, unanswered], 1.0, no_answer=True)) for x in (right, wrong)]
    without = float(_loss(right[[0, 1, 3, 4]], [answered, unanswered], 1.0))

    assert with_it[0] < with_it[1]
    assert with_it[0] < 0.1 and without < 0.2


def test_a_few_steps_with_the_no_answer_candidate_lower_the_loss() -> None:
    base = resolve_registered(REGISTRY["minilm-l6"])
    params = FitParams(epochs=12, pairs_per_step=6, learning_rate=2e-4, warmup=0.0, no_answer=True)

    _model, losses = fit_reader([*TINY_EXAMPLES, UNANSWERED], base, params)

    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3


def test_an_answer_head_leaves_the_ranking_loss_to_the_sentences() -> None:
    import torch

    from footnote.training.reader_fit import _loss

    answered, unanswered = TINY_EXAMPLES[1], UNANSWERED
    # (ranking, answered) logits of [sentence, sentence, no answer] for each question.
    ranking = torch.tensor([-2.0, 3.0, 9.0, -2.0, -2.0, 9.0])
    right = torch.stack([ranking, torch.tensor([-2.0, 3.0, -3.0, -2.0, -2.0, 3.0])], dim=-1)
    wrong = torch.stack([ranking, torch.tensor([-2.0, 3.0, 3.0, -2.0, 3.0, -3.0])], dim=-1)

    losses = [float(_loss(x, [answered, unanswered], 1.0, no_answer=True)) for x in (right, wrong)]
    # The first head is judged on the sentences alone: its no-answer rows cost nothing.
    lowered = right.clone()
    lowered[[2, 5], 0] = -9.0

    assert losses[0] < losses[1]
    assert float(_loss(lowered, [answered, unanswered], 1.0, no_answer=True)) == pytest.approx(losses[0])
    assert losses[0] < float(_loss(ranking[[0, 1, 3, 4]], [answered, unanswered], 1.0)) + 0.05


@pytest.mark.integration
def test_a_reader_with_an_answer_head_learns_and_ships_both_logits(tmp_path: Path) -> None:
    base = resolve_registered(REGISTRY["minilm-l6"])
    params = FitParams(epochs=12, pairs_per_step=6, learning_rate=2e-4, warmup=0.0, answer_head=True)

    model, losses = fit_reader([*TINY_EXAMPLES, UNANSWERED], base, params)
    export_reader(model, base, tmp_path / "reader", {"answer_head": True, "no_answer": True})
    reader = open_sentence_reader(str(tmp_path / "reader"))
    candidates = [*UNANSWERED.candidates, NO_ANSWER_CANDIDATE]
    reading = reader.read(UNANSWERED.question, candidates)

    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
    assert reader.no_answer and reading.answered is not None
    assert len(reading.scores) == len(reading.answered) == len(candidates)
    assert reader.score(UNANSWERED.question, candidates) == reading.scores


def test_the_bundled_readers_answer_head_tells_an_answered_question_from_a_near_miss(
    reader: OnnxSentenceReader,
) -> None:
    from footnote.answer.evidence import answered_probability

    sentences = [
        reader_input("The Fresnel lens was invented by Augustin-Jean Fresnel in 1822.", "Lighthouses"),
        reader_input("Keepers trimmed the wicks and wound the clockwork every night.", "Lighthouses"),
    ]

    def answered(question: str) -> float:
        reading = reader.read(question, [*sentences, NO_ANSWER_CANDIDATE])
        assert reading.answered is not None
        *logits, no_answer = reading.answered
        return answered_probability(logits, no_answer)

    assert reader.no_answer
    assert answered("Who invented the Fresnel lens?") > 0.5 > answered("Who invented the foghorn?")
