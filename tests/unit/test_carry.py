"""A question in a language the sentence reader does not read, over sources mostly in English, is
put into English by the model that answers its language, then searched, read and answered as an
English question, after a notice in the question's language that names it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from footnote.answer.carry import carried_into_english, carry_messages
from footnote.answer.citations import SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.policy import EXTRACT_READER, AnswerPolicy
from footnote.answer.prompt import carried_notice
from footnote.answer.result import DoneEvent
from footnote.answer.usage import CARRY_STEP, TokenUsage
from footnote.application import Application
from footnote.models.base import Generator
from footnote.models.sentence_reader import Reading, SentenceReader
from tests.fakes import ScriptedGenerator, bees_and_tides


class EnglishReader(SentenceReader):
    """Reads English only, scores every sentence alike, and records what it was asked."""

    languages = frozenset({"en"})

    def __init__(self) -> None:
        self.questions: list[str] = []

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        self.questions.append(question)
        return Reading([0.0] * len(candidates))


class Languages:
    """The answer model reads English; `chinese` answers Chinese."""

    def __init__(self, chinese: Generator | None) -> None:
        self.chinese = chinese

    def reads(self, language: str) -> bool:
        return language == "en"

    def generator_for(self, language: str) -> Generator | None:
        return self.chinese if language == "zh" else None


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    yield from bees_and_tides(tmp_path)


def engine(
    app: Application, reader: SentenceReader, chinese: Generator | None, carry: bool = True
) -> AnswerEngine:
    # Retelling the answer in Chinese is tested in test_retell.py.
    policy = AnswerPolicy(
        app.retrieval_params(5), reader=EXTRACT_READER, carry_questions=carry, retell_answers=False
    )
    support = SupportModels(app.embedder, None, reader)
    return AnswerEngine(app.retriever(), app.generator, support, policy, languages=Languages(chinese))


def test_a_chinese_question_over_english_documents_is_answered_as_its_english_question(
    app: Application,
) -> None:
    reader = EnglishReader()
    chinese = ScriptedGenerator(["How do foraging bees share where food is?"])
    usage = TokenUsage()
    events = list(engine(app, reader, chinese).stream("蜜蜂怎样告诉同伴食物在哪里？", usage=usage))
    answer = next(event.answer for event in events if isinstance(event, DoneEvent))
    assert not answer.abstained
    notice, quote = answer.sentences[0], answer.sentences[-1]
    assert "How do foraging bees share where food is?" in notice.text and "文档是英文的" in notice.text
    assert not notice.citations
    assert quote.citations and quote.citations[0].path.endswith("bees.md")
    assert set(reader.questions) == {"How do foraging bees share where food is?"}  # never the Chinese one
    assert chinese.calls[0][-1].content == "蜜蜂怎样告诉同伴食物在哪里？"
    assert usage.steps[CARRY_STEP].calls == 1


def test_it_stays_in_chinese_when_carrying_is_off_or_no_model_reads_chinese(app: Application) -> None:
    question = "蜜蜂怎样告诉同伴食物在哪里？"
    off = ScriptedGenerator(["蜜蜂用舞蹈告诉同伴。"])
    list(engine(app, EnglishReader(), off, carry=False).stream(question))
    assert not any("Translate" in call[0].content for call in off.calls)  # it answered, in Chinese
    reader = EnglishReader()
    list(engine(app, reader, None).stream(question))
    assert reader.questions == []  # quoted by the blend, with the notice that no model reads Chinese


def test_an_english_question_is_not_carried(app: Application) -> None:
    chinese = ScriptedGenerator([])  # any call would fail
    reader = EnglishReader()
    answer = engine(app, reader, chinese).ask("What pulls the oceans into two bulges?")
    assert set(reader.questions) == {"What pulls the oceans into two bulges?"}
    assert "moon" in answer.text


@pytest.mark.parametrize(
    "reply",
    [
        "蜜蜂如何交流？",
        "",
        "2022-01-01",
        "C919 is the C99 standard.",
        "Why do bees " + "dance and share food and talk about flowers " * 6 + "?",
    ],
)
def test_a_reply_that_is_not_one_english_question_is_not_taken(reply: str) -> None:
    assert carried_into_english(ScriptedGenerator([reply]), "蜜蜂如何交流？") is None


def test_the_first_line_of_the_reply_is_the_question() -> None:
    model = ScriptedGenerator(['"How do I unpack a .tar.gz file with tar?"\nThat is the question.'])
    assert (
        carried_into_english(model, "tar 如何解压 .tar.gz 文件？")
        == "How do I unpack a .tar.gz file with tar?"
    )
    messages = carry_messages("tar 如何解压 .tar.gz 文件？")
    assert messages[0].role == "system" and messages[-1].content == "tar 如何解压 .tar.gz 文件？"
    assert [m.role for m in messages[1:-1]] == ["user", "assistant"] * 3


def test_the_notice_is_in_the_questions_language() -> None:
    assert carried_notice("zh", "How?") == "文档是英文的：按英文问题“How?”查找和阅读，下面引用原文。"
    assert carried_notice("ja", "How?").startswith("The documents are in English")


def test_where_the_english_question_is_declined_it_is_read_as_asked(app: Application) -> None:
    # The English question finds nothing that answers it: before anything is said, the question
    # is read as it was asked, and declined in its own language.
    chinese = ScriptedGenerator(["What is the capital of France?"])
    answer = engine(app, EnglishReader(), chinese).ask("法国的首都是哪里？")
    assert answer.abstained and answer.text == "文档中没有这个问题的答案。"
    assert len(chinese.calls) == 1  # the translation alone: the decline writes nothing
