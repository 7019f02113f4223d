"""Chinese questions: answered by a model that reads Chinese, in Chinese, with checked quotes; and
without such a model, said so once, with the checked quote alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.answer.citations import CitationChecker, is_no_answer
from footnote.answer.prompt import NO_ANSWER_ZH, SYSTEM_PROMPT_ZH, no_reader_notice
from footnote.answer.result import DoneEvent, SourcesEvent
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from tests.fakes import HashingEmbedder, ScriptedGenerator

TEMPLE = (
    "当时，大批民众聚集在寺庙门口，大门打开后人群立刻涌入。"
    "今年年初，瓦希诺德维寺也发生一起踩踏事件，造成至少12人死亡、14人受伤；"
    "事后印度总理莫迪也在第一时间就此事发声。"
)
ORCHARD = "Apple trees need a cold winter to set fruit well. Bees carry pollen between the varieties.\n"
QUESTION_ZH = "瓦希诺德维寺踩踏事件造成多少人死亡？"
ANSWER_ZH = "瓦希诺德维寺踩踏事件造成至少12人死亡 [1]。"


def hit(text: str) -> SearchHit:
    return SearchHit(1, 1, "temple.txt", "temple.txt", text, 0, len(text))


def test_a_chinese_answer_sentence_cites_the_clause_that_states_it() -> None:
    checker = CitationChecker([hit(TEMPLE)], HashingEmbedder(), question=QUESTION_ZH)
    sentence = checker.check(ANSWER_ZH)
    assert sentence.supported and [c.number for c in sentence.citations] == [1]
    quote = sentence.citations[0].quote
    # the clause up to the semicolon: not the sentences around it
    assert quote == "今年年初，瓦希诺德维寺也发生一起踩踏事件，造成至少12人死亡、14人受伤；"


def test_a_wrong_number_beside_a_right_chinese_quote_is_flagged() -> None:
    checker = CitationChecker([hit(TEMPLE)], HashingEmbedder(), question=QUESTION_ZH)
    assert not checker.check("瓦希诺德维寺踩踏事件造成至少30人死亡 [1]。").supported


def test_the_chinese_refusal_is_a_refusal() -> None:
    assert is_no_answer(NO_ANSWER_ZH) and is_no_answer("文档中没有这个问题的答案")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "temple.txt").write_text(TEMPLE + "\n", encoding="utf-8")
    (folder / "orchard.txt").write_text(ORCHARD, encoding="utf-8")
    return folder


def build(
    tmp_path: Path,
    corpus: Path,
    generator: ScriptedGenerator,
    language: ScriptedGenerator | None,
    language_llm: str = "qwen2.5-0.5b",
) -> Application:
    settings = Settings(
        home=tmp_path / "home", reader="sources", llm_languages=["en"], language_llm=language_llm
    )
    app = create_app(
        settings,
        embedder=HashingEmbedder(),
        generator=generator,
        language_generator=language,
    )
    app.ingest([corpus])
    return app


def test_a_chinese_question_goes_to_the_model_that_reads_chinese(tmp_path: Path, corpus: Path) -> None:
    english = ScriptedGenerator(["Apple trees need a cold winter to set fruit well [1]."])
    chinese = ScriptedGenerator([ANSWER_ZH])
    chinese.name = "reads-chinese"
    app = build(tmp_path, corpus, english, chinese)
    events = list(app.answer_engine().stream(QUESTION_ZH))
    first, done = events[0], events[-1]
    assert isinstance(first, SourcesEvent) and isinstance(done, DoneEvent)
    answer = done.answer
    # a streaming client is told the model that answers before the answer begins
    assert first.model == answer.model == "reads-chinese" and not english.calls
    system, *_, user = chinese.calls[0]
    assert system.content == SYSTEM_PROMPT_ZH and user.content.endswith(f"问题：{QUESTION_ZH}")
    assert "12人死亡" in answer.text and answer.citations
    assert answer.citations[0].path.endswith("temple.txt")
    # an English question still goes to the answer model
    assert app.answer_engine().ask("What do apple trees need?").model == english.name


def test_without_a_model_that_reads_chinese_the_answer_says_so_and_quotes(
    tmp_path: Path, corpus: Path
) -> None:
    english = ScriptedGenerator([])  # never called: it would fail
    app = build(tmp_path, corpus, english, None, language_llm="")
    answer = app.answer_engine().ask(QUESTION_ZH)
    notice, quote = answer.sentences
    assert notice.text == no_reader_notice("zh") and not notice.is_claim and not notice.flagged
    assert quote.supported and "12人死亡" in quote.text and quote.citations
    assert answer.text.startswith(no_reader_notice("zh")) and not english.calls
    assert not answer.abstained
