"""A question in a language the sentence reader does not read is read by the multilingual
embedder in its place: its similarity chooses the quote and decides whether to decline. The
sources are given (every chunk of the index): finding them across languages is search's part."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from footnote.answer.citations import SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.policy import EXTRACT_READER, AnswerPolicy
from footnote.answer.result import Answer
from footnote.application import Application
from footnote.core.hits import SearchHit
from footnote.models.base import Embedder, Vector
from footnote.models.sentence_reader import Reading, SentenceReader
from tests.fakes import bees_and_tides

# What each dimension of the concept embedder stands for, in both languages.
CONCEPTS = (("交流", "share where food is"), ("首都", "capital"))


class ConceptEmbedder(Embedder):
    """One dimension per concept, whatever the language it is named in, and one for the rest:
    a question and a sentence about the same thing point alike across languages."""

    name = "concepts"
    dimension = len(CONCEPTS) + 1
    max_tokens = 512

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        return [self._vector(text.lower()) for text in texts]

    def _vector(self, text: str) -> Vector:
        for index, words in enumerate(CONCEPTS):
            if any(word in text for word in words):
                return [1.0 if i == index else 0.0 for i in range(self.dimension)]
        return [0.0] * len(CONCEPTS) + [1.0]


class EnglishReader(SentenceReader):
    """Reads English only, and scores every sentence alike: the blend and the embedder decide."""

    languages = frozenset({"en"})

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        return Reading([0.0] * len(candidates))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    yield from bees_and_tides(tmp_path)


def engine(app: Application, multilingual: Embedder | None, floor: float = 0.5) -> AnswerEngine:
    policy = AnswerPolicy(app.retrieval_params(5), reader=EXTRACT_READER, across_language_floor=floor)
    support = SupportModels(app.embedder, None, EnglishReader(), multilingual)
    return AnswerEngine(app.retriever(), app.generator, support, policy)


def ask(app: Application, engine: AnswerEngine, question: str) -> Answer:
    hits = app.search("bees dance colony nest moon oceans tides", limit=5)
    assert len(hits) == 2
    return engine.ask_sources(question, hits)


def test_a_chinese_question_is_quoted_from_the_english_sentence_that_answers_it(app: Application) -> None:
    answer = ask(app, engine(app, ConceptEmbedder()), "蜜蜂如何交流？")
    assert not answer.abstained
    assert len(answer.citations) == 1 and answer.citations[0].path.endswith("bees.md")
    assert "Foraging bees share where food is with a dance." in answer.citations[0].quote


def test_a_chinese_question_the_documents_do_not_answer_is_declined(app: Application) -> None:
    answer = ask(app, engine(app, ConceptEmbedder()), "法国的首都是哪里？")
    assert answer.abstained and not answer.citations


def test_without_the_multilingual_embedder_the_word_overlap_floor_declines_it(app: Application) -> None:
    # Its words cannot meet the English sentences': what the multilingual reading is for.
    assert ask(app, engine(app, None), "蜜蜂如何交流？").abstained


def test_an_english_question_is_read_as_before(app: Application) -> None:
    concepts = ConceptEmbedder()
    answer = ask(app, engine(app, concepts, floor=1.0), "What pulls the oceans into bulges?")
    assert not answer.abstained  # the reader reads English: the multilingual floor plays no part
    assert "moon" in answer.text


def _hits(count: int, language: str) -> list[SearchHit]:
    return [SearchHit(n, n, f"doc{n}.md", "", "text", 0, 4, language=language) for n in range(count)]


def test_a_question_read_across_languages_is_given_more_sources(app: Application) -> None:
    policy = AnswerPolicy(app.retrieval_params(5), reader=EXTRACT_READER, across_language_sources=10)
    across = AnswerEngine(
        app.retriever(),
        app.generator,
        SupportModels(app.embedder, None, EnglishReader(), ConceptEmbedder()),
        policy,
    )
    chinese = across.for_language("zh")
    assert chinese.retrieval().limit == 10
    # Most of them English: the embedder reads them all. Most of them Chinese: the usual five.
    assert len(chinese.kept(_hits(10, "en"))) == 10
    assert len(chinese.kept(_hits(10, "zh"))) == 5
    # The reader reads English questions; without the embedder nothing reads across.
    assert across.for_language("en").retrieval().limit == 5
    alone = AnswerEngine(
        app.retriever(), app.generator, SupportModels(app.embedder, None, EnglishReader()), policy
    )
    assert alone.for_language("zh").retrieval().limit == 5
    # 0 (or fewer than top_k) leaves the number as for any question.
    fewer = replace(policy, across_language_sources=0)
    assert replace(across, policy=fewer).for_language("zh").retrieval().limit == 5
