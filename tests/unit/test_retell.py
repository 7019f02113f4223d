"""A carried answer retold in the asker's language: the model that answers it puts the first quote
into it, and that is shown only where the round trip supports it (put back into
English, it meets the English check; its numbers and Latin-letter words are in what supports it
or in the question; it is in the question's language)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.answer.citations import AnswerSentence, CitationChecker, SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.policy import EXTRACT_READER, AnswerPolicy
from footnote.answer.result import DoneEvent, SentenceEvent
from footnote.answer.retell import Retelling, back_messages, leading, literals_in, retell_messages
from footnote.answer.usage import RETELL_STEP, TokenUsage
from footnote.application import Application
from footnote.core.hits import SearchHit
from footnote.models.base import Generator
from tests.fakes import HashingEmbedder, ScriptedGenerator, bees_and_tides
from tests.unit.test_carry import EnglishReader, Languages

QUOTE = "Use -C - to continue an interrupted transfer where it stopped."


@pytest.mark.parametrize(
    ("sentence", "held"),
    [
        ("用 -C - 让 curl 从中断处继续传输。", False),  # "curl" is in neither
        ("用 -C - 从中断的地方继续传输。", True),
        ("用 -c 选项。", True),  # case aside
        ("最多重试 3 次。", False),
        ("从中断的地方继续。", True),  # nothing literal to hold
    ],
)
def test_numbers_and_latin_words_must_be_in_the_quote_or_the_question(sentence: str, held: bool) -> None:
    assert literals_in(sentence, QUOTE) is held
    assert literals_in("用 curl 续传。", f"{QUOTE} curl 怎样续传？")


def quote_of(text: str) -> AnswerSentence:
    return AnswerSentence(text, [], True, [], False, score=1.0)


def checker() -> CitationChecker:
    hit = SearchHit(7, 3, "/docs/curl.txt", "curl", QUOTE, 0, len(QUOTE), (), None)
    return CitationChecker([hit], HashingEmbedder(), question="How do I resume a transfer?")


def test_a_sentence_whose_english_the_source_supports_cites_it() -> None:
    model = ScriptedGenerator([QUOTE])  # the sentence put back into English
    retold = Retelling("怎样续传？", "zh", model).checked("用 -C - 从中断的地方继续传输。", checker())
    assert retold.supported and retold.citations[0].path == "/docs/curl.txt"
    assert model.calls[0] == back_messages("用 -C - 从中断的地方继续传输。")


@pytest.mark.parametrize(
    ("sentence", "english"),
    [
        (
            "月亮把海水拉成两个隆起。",
            "The moon pulls the oceans into two bulges.",
        ),  # not what the source says
        ("最多重试 3 次，用 -C -。", QUOTE),  # its English is supported, but "3" is in no source
        (QUOTE, None),  # not in Chinese: a copy of the quote adds nothing (and is not put back)
    ],
)
def test_a_sentence_the_round_trip_does_not_support_is_flagged(sentence: str, english: str | None) -> None:
    model = ScriptedGenerator([english] if english is not None else [])
    retold = Retelling("怎样续传？", "zh", model).checked(sentence, checker())
    assert retold.flagged and not retold.citations


def test_the_model_is_asked_for_the_quote_in_the_questions_language() -> None:
    messages = retell_messages("zh", QUOTE)
    assert "简体中文" in messages[0].content and messages[1].content == QUOTE


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    yield from bees_and_tides(tmp_path)


def engine(app: Application, chinese: Generator, retell: bool = True) -> AnswerEngine:
    policy = AnswerPolicy(app.retrieval_params(5), reader=EXTRACT_READER, retell_answers=retell)
    support = SupportModels(app.embedder, None, EnglishReader())
    return AnswerEngine(app.retriever(), app.generator, support, policy, languages=Languages(chinese))


QUESTION = "蜜蜂怎样告诉同伴食物在哪里？"
CARRIED = "How do foraging bees share where food is?"
RETOLD = "采集蜂用舞蹈告诉同伴食物在哪里。"


def test_a_carried_answer_is_retold_after_its_quote(app: Application) -> None:
    chinese = ScriptedGenerator([CARRIED, RETOLD, "Foraging bees share where food is with a dance."])
    usage = TokenUsage()
    events = list(engine(app, chinese).stream(QUESTION, usage=usage))
    answer = next(event.answer for event in events if isinstance(event, DoneEvent))
    notice, quote, retold = answer.sentences
    assert quote.citations and retold.supported and retold.text == RETOLD
    assert retold.citations[0].path == quote.citations[0].path and quote.citations[0].path.endswith("bees.md")
    assert answer.text.endswith("告诉同伴食物在哪里[1]。")
    assert chinese.calls[1][-1].content == quote.text  # the quote, put into Chinese
    assert usage.steps[RETELL_STEP].calls == 2  # written, then put back into English
    shown = [event.sentence for event in events if isinstance(event, SentenceEvent)]
    assert shown == [notice, quote, retold]


def test_an_unsupported_retelling_is_not_shown(app: Application) -> None:
    chinese = ScriptedGenerator([CARRIED, "蜂群有三千只蜜蜂。", "A colony has three thousand bees."])
    events = list(engine(app, chinese).stream(QUESTION))
    answer = next(event.answer for event in events if isinstance(event, DoneEvent))
    assert answer.sentences[-1].flagged and "三千" not in answer.text
    assert not any(isinstance(e, SentenceEvent) and "三千" in e.sentence.text for e in events)


def test_retelling_off_shows_the_quotes_alone(app: Application) -> None:
    chinese = ScriptedGenerator([CARRIED])  # a retelling would call it again, and fail
    answer = engine(app, chinese, retell=False).ask(QUESTION)
    assert not answer.abstained and len(answer.sentences) == 2


def test_a_retelling_that_says_the_documents_do_not_answer_is_not_shown() -> None:
    model = ScriptedGenerator(["The documents do not contain an answer to this question."])
    retold = Retelling("怎样续传？", "zh", model).checked("文档中没有这个问题的答案。", checker())
    assert retold.flagged and not retold.citations


def test_a_long_quote_is_not_retold() -> None:
    long_quote = quote_of(" ".join(["word"] * 61) + ".")
    assert Retelling("怎样续传？", "zh", ScriptedGenerator([])).sentences([long_quote], checker()) == []


def test_of_a_long_point_its_first_sentences_within_the_bound_are_retold() -> None:
    # A broad answer's point joins consecutive sentences: the first ones that fit are retold.
    first, second = QUOTE, " ".join(["Then"] + ["word"] * 65) + "."
    assert leading(f"{first} {second}") == first
    assert leading(first) == first
    assert leading(f"{second} {first}") == ""  # its first sentence alone is too long
    model = ScriptedGenerator(["用 -C - 从中断的地方继续传输。", QUOTE])  # retold, then put back
    retold = Retelling("怎样续传？", "zh", model).sentences([quote_of(f"- {first} {second}")], checker())
    assert model.calls[0][-1].content == first
    assert [sentence.text for sentence in retold] == ["用 -C - 从中断的地方继续传输。"]
    assert retold[0].supported
