"""Answers made of several checked passages: the sections chosen, the points taken from them,
the shape model that asks for them, and the engine quoting them without generating."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from footnote.answer.citations import AnswerSentence, Citation, SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.points import (
    POINT_WORDS,
    ScoredSentences,
    chosen_sections,
    chunk_weights,
    points_words,
    select_points,
)
from footnote.answer.policy import EVIDENCE_READER, AnswerPolicy, PointWords
from footnote.answer.prompt import NO_ANSWER
from footnote.answer.result import Asked
from footnote.answer.sentence_spans import sentence_spans
from footnote.answer.shape import SHAPE_FILE, QuestionShape, ShapeModel, bundled_shape, open_shape, read_shape
from footnote.answer.streaming import final
from footnote.answer.usage import TokenUsage
from footnote.application import Application, create_app
from footnote.cli import output
from footnote.config import Settings
from footnote.core.cjk import count_words
from footnote.core.hits import SearchHit
from footnote.errors import ConfigError
from footnote.models.base import Vector
from tests.fakes import HashingEmbedder, ScriptedGenerator


def hit(number: int, text: str, document: int | None = None, start: int = 0) -> SearchHit:
    return SearchHit(
        number, document or number, f"doc{number}.md", f"doc {number}", text, start, start + len(text)
    )


STEPS = "First, boil the water. Second, grind the beans. Third, pour and wait four minutes."
OTHER = "Tea is brewed differently. Green tea wants cooler water."


def scored_of(hits: list[SearchHit], scores: dict[tuple[int, int], float]) -> ScoredSentences:
    spans = sentence_spans(hits)
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    return ScoredSentences(spans, texts, [scores.get((s.source, s.position), -8.0) for s in spans])


def test_words_count_cjk_characters_one_by_one() -> None:
    assert count_words("Boil the water, then grind.") == 5
    assert count_words("用 curl 下载") == 4  # 用, curl, 下, 载
    assert count_words("```") == 0


def test_a_chunk_with_several_answering_sentences_outweighs_one_lucky_sentence() -> None:
    hits = [hit(1, STEPS), hit(2, OTHER)]
    reading = scored_of(hits, {(0, 0): 1.0, (0, 1): 1.0, (0, 2): 1.0, (1, 0): 1.5})
    weights = chunk_weights(reading)
    assert weights[0] > weights[1]
    assert chosen_sections(reading, margin=0.1) == [0]
    # Within the margin the second chunk joins: the other side of a comparison.
    assert chosen_sections(reading, margin=5.0) == [0, 1]


def test_points_come_in_the_sources_order_as_one_quote_per_run() -> None:
    hits = [hit(1, OTHER, document=7, start=500), hit(2, STEPS, document=7, start=0)]
    # The steps' last sentence reads best, the tea chunk close behind: both join, in document order.
    reading = scored_of(hits, {(1, 2): 3.0, (1, 0): 1.0, (0, 0): 2.5, (0, 1): 2.0})
    points = select_points(hits, reading)
    assert [p.source for p in points] == [1, 0]
    assert [hits[p.source].text[p.start : p.end] for p in points] == [STEPS, OTHER]


def test_the_best_weighed_document_comes_first_each_in_its_own_order() -> None:
    hits = [hit(1, OTHER, document=3), hit(2, STEPS, document=9, start=400), hit(3, STEPS, document=9)]
    # The later document weighs most: its points lead, in its own order, the other's follow.
    reading = scored_of(hits, {(1, 2): 4.0, (2, 0): 3.5, (0, 0): 3.0})
    points = select_points(hits, reading)
    assert hits[points[0].source].document_id == 9
    assert [hits[p.source].start for p in points if hits[p.source].document_id == 9] == [0, 400]
    assert hits[points[-1].source].document_id == 3


def test_other_chunks_fill_the_answer_once_the_chosen_sections_run_out() -> None:
    hits = [hit(1, "Pinning keeps versions fixed."), hit(2, OTHER)]
    scored = scored_of(hits, {(0, 0): 9.0})  # the tea chunk is far outside the margin
    assert chosen_sections(scored) == [0]
    points = select_points(hits, scored)
    assert {p.source for p in points} == {0, 1}


def test_points_stay_within_the_word_budget() -> None:
    long = " ".join(f"Step {n} says to do thing number {n} with care and patience." for n in range(40))
    hits = [hit(1, long)]
    reading = scored_of(hits, {})
    points = select_points(hits, reading, budget_words=30)
    shown = " ".join(hits[0].text[p.start : p.end] for p in points)
    assert 0 < count_words(shown) <= 30
    assert count_words(shown) <= POINT_WORDS


def test_points_take_more_words_where_the_reader_rates_many_sentences_near_its_best() -> None:
    long = " ".join(f"Step {n} says to do thing number {n} with care and patience." for n in range(40))
    hits = [hit(1, long)]
    spread = {(0, n): 5.0 - n * 0.1 for n in range(40)}  # every sentence within 4 of the best
    read = replace(scored_of(hits, spread), read=True)
    assert points_words(read, PointWords(140, 300, 4.0)) == 300  # 40 sentences of 12 words, 300 at most
    assert points_words(read, PointWords(140, 300, 0.0)) == 140  # margin 0: always the usual words
    assert points_words(replace(read, read=False), PointWords(140, 300, 4.0)) == 140  # the blend's scale
    crisp = replace(scored_of(hits, {(0, 0): 5.0}), read=True)  # one sentence stands out
    assert points_words(crisp, PointWords(140, 300, 4.0)) == 140
    near = replace(scored_of(hits, {(0, n): 5.0 for n in range(15)}), read=True)
    assert points_words(near, PointWords(140, 300, 4.0)) == 15 * 12  # the near sentences' own words
    shown = select_points(hits, near, points_words(near, PointWords(140, 300, 4.0)))
    assert 140 < sum(count_words(hits[0].text[p.start : p.end]) for p in shown) <= 15 * 12


def test_the_bundled_shape_model_is_pinned_and_reads_its_embedders_vectors() -> None:
    model = bundled_shape()
    assert model.embedder == "multilingual-e5-small"
    assert len(model.weights) == 384 and 0.0 < model.threshold < 1.0
    manifest = json.loads(SHAPE_FILE.read_text(encoding="utf-8"))
    assert manifest["cross_validated_by_document"]["auc"] > 0.5
    assert "CC BY-SA" in manifest["licence"]


def test_a_shape_model_says_broad_above_its_threshold(tmp_path: Path) -> None:
    path = tmp_path / "shape.json"
    path.write_text(json.dumps({"embedder": "e", "weights": [2.0, -2.0], "bias": 0.0, "threshold": 0.5}))
    model = read_shape(path)
    assert model.is_broad([1.0, 0.0]) and not model.is_broad([0.0, 1.0])
    assert model.broad_probability([0.0, 0.0]) == pytest.approx(0.5)


def test_a_heading_or_title_alone_is_no_point_and_four_sections_take_turns() -> None:
    steps = SearchHit(
        1, 1, "coffee.md", "Coffee", f"## Steps\n\n{STEPS}", 0, 99, heading_path=("Coffee", "Steps")
    )
    others = [hit(n, f"Other thing number {n} is described here.") for n in range(2, 8)]
    hits = [steps, *others]
    scored = scored_of(hits, {(0, 0): 9.0, (0, 1): 1.0, **{(n, 0): 7.0 for n in range(1, 7)}})
    points = select_points(hits, scored)
    assert all("## Steps" not in hits[p.source].text[p.start : p.end] for p in points)
    assert len(chosen_sections(scored)) == 4  # six chunks are within the margin: four take turns
    assert len({p.source for p in points}) >= 4


class WordEmbedder(HashingEmbedder):
    """Two dimensions: whether the text asks to summarise, and whether it does not."""

    def embed_batch(self, texts: list[str]) -> list[Vector]:  # type: ignore[override]
        return [[1.0, 0.0] if "summar" in text.lower() else [0.0, 1.0] for text in texts]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "coffee.md").write_text(f"# Coffee\n\n{STEPS}\n", encoding="utf-8")
    settings = Settings(home=tmp_path / "home", reader="evidence", language_embedder="none")
    app = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    app.ingest([folder])
    yield app
    app.close()


def engine(app: Application, point_words: int = POINT_WORDS) -> AnswerEngine:
    shape = QuestionShape(WordEmbedder(), ShapeModel("words", (4.0, -4.0), 0.0, 0.5))
    policy = AnswerPolicy(
        app.retrieval_params(5), reader=EVIDENCE_READER, point_words=PointWords(point_words)
    )
    return AnswerEngine(app.retriever(), app.generator, SupportModels(app.embedder), policy, shape=shape)


def test_a_broad_question_is_answered_with_its_points_and_nothing_generated(app: Application) -> None:
    answer = final(engine(app).stream("Summarize how to make coffee: boil, grind, pour."))
    assert answer.citations and all(s.supported for s in answer.sentences)
    assert "boil the water" in answer.text and "pour and wait" in answer.text
    assert answer.text.index("boil") < answer.text.index("grind") < answer.text.index("pour")
    assert answer.prompt_tokens == 0  # the scripted generator has no reply: it was never called


def test_the_policy_sets_how_many_words_the_points_take(app: Application) -> None:
    question = "Summarize how to make coffee: boil, grind, pour."
    whole = final(engine(app).stream(question))
    short = final(engine(app, point_words=8).stream(question))
    assert 0 < count_words(short.text) <= 8 + 2  # the list marks and footnote markers aside
    assert "boil the water" in whole.text and "boil the water" not in short.text


def test_the_terminal_lists_every_quote_of_a_source_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = Asked("Summarize the steps.", [hit(1, STEPS)], "m", NO_ANSWER, {}, TokenUsage())
    quotes = ["Third, pour and wait four minutes.", "First, boil the water."]

    def quoted(q: str) -> AnswerSentence:
        start = STEPS.index(q)
        citation = Citation(1, 1, 1, "doc1.md", q, start, start + len(q), None, 1.0)
        return AnswerSentence(q, [citation], True, [], corrected=False)

    sentences = [quoted(q) for q in quotes]
    terminal = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=terminal, width=1000, highlight=False))
    output.print_sources(asked.answer("", [*sentences, sentences[0]]))
    listed = terminal.getvalue()
    assert listed.count('"First, boil the water."') == 1 and listed.count('"Third, pour') == 1
    assert listed.index("First, boil") < listed.index("Third, pour")


def test_a_point_that_says_nothing_new_is_left_out() -> None:
    hits = [hit(1, "Boil the water before grinding the beans."), hit(2, "Boil the water.")]
    scored = scored_of(hits, {(0, 0): 5.0, (1, 0): 4.5})
    points = select_points(hits, scored)
    shown = [hits[p.source].text[p.start : p.end] for p in points]
    assert shown == ["Boil the water before grinding the beans."]


def test_a_malformed_shape_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "shape.json"
    path.write_text('{"embedder": "e", "weights": [1.0]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="footnote train shape --out"):
        read_shape(path)
    with pytest.raises(ConfigError, match="no such file"):
        open_shape(str(tmp_path / "missing.json"))


def test_a_sentence_that_announces_what_follows_comes_with_it() -> None:
    text = (
        "Coffee needs care. To brew it in a press:\n\n"
        "Steep the grounds for four minutes. Press slowly. Tea is another matter entirely today."
    )
    hits = [hit(1, text)]
    spans = sentence_spans(hits)
    announcing = next(s.position for s in spans if text[s.start : s.end].endswith(":"))
    # The announcing sentence reads best, then the first: the steep step reads worst of all, yet
    # comes with the sentence that announces it, within a budget that leaves the rest out.
    scored = scored_of(hits, {(0, announcing): 5.0, (0, 0): 4.0, (0, announcing + 1): -9.0})
    shown = " ".join(text[p.start : p.end] for p in select_points(hits, scored, budget_words=17))
    assert "To brew it in a press:" in shown
    assert "Steep the grounds for four minutes." in shown
    assert "Tea is another matter" not in shown
    # Without the colon the step is left out: it reads worst.
    plain = text.replace("press:", "press.")
    hits = [hit(1, plain)]
    shown = " ".join(
        plain[p.start : p.end]
        for p in select_points(
            hits,
            scored_of(hits, {(0, announcing): 5.0, (0, 0): 4.0, (0, announcing + 1): -9.0}),
            budget_words=17,
        )
    )
    assert "Steep the grounds" not in shown
