"""Chinese questions over the English sample corpus, end to end with the real models: put into
English by the language model and answered as English questions, or, where that declines, read by
the multilingual embedder in the English sentence reader's place."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.answer.result import Answer, DoneEvent
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.cjk import has_cjk
from footnote.models.base import Embedder
from footnote.models.e5 import engine_missing_reason
from tests.store_modes import lasting_settings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(engine_missing_reason()), reason="multilingual-e5-small needs AVX2"),
]

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Application:
    home = tmp_path_factory.mktemp("home")
    application = create_app(Settings(home=home, **lasting_settings(home)), embedder=real_embedder)
    application.ingest([SAMPLE])
    return application


def answered(app: Application, question: str) -> Answer:
    done = [e for e in app.ask_stream(question) if isinstance(e, DoneEvent)]
    assert len(done) == 1
    return done[0].answer


def test_a_chinese_question_is_answered_with_an_english_sentence_not_a_heading(app: Application) -> None:
    answer = answered(app, "Fresnel 透镜有什么作用？")
    assert not answer.abstained and answer.citations
    first = answer.citations[0]
    assert Path(first.path).name == "lighthouses.md"
    assert "Fresnel" in first.quote and not first.quote.lstrip().startswith("#")
    assert first.quote in (SAMPLE / "lighthouses.md").read_text(encoding="utf-8")


@pytest.mark.xfail(
    strict=True,
    reason="a known miss: carried into English, it meets the English reader's, which answers "
    "'What is the capital of France?' from 'La Rance in France' (docs/benchmarks.md, Chinese questions "
    "over English documents)",
)
def test_a_chinese_question_the_documents_do_not_answer_is_declined(app: Application) -> None:
    answer = answered(app, "法国的首都是哪里？")
    assert answer.abstained and not answer.citations
    assert answer.text == "文档中没有这个问题的答案。"


def test_how_bees_communicate_asked_in_chinese_is_answered_from_honeybees(app: Application) -> None:
    # No word of the question meets the English documents': it is put into English first.
    answer = answered(app, "蜜蜂如何交流？")
    assert not answer.abstained and answer.citations
    notice = answer.sentences[0]
    assert notice.text.startswith("文档是英文的") and not notice.citations
    assert {Path(c.path).name for c in answer.citations} == {"honeybees.txt"}
    quote = answer.citations[0].quote
    assert quote in (SAMPLE / "honeybees.txt").read_text(encoding="utf-8") and quote.isascii()
    assert answer.usage.steps["carry"].calls == 1
    # Then the best-read quote in Chinese, checked by the round trip, citing the English text.
    retold = answer.sentences[-1]
    assert has_cjk(retold.text) and retold.supported and retold.text.rstrip("。") in answer.text
    assert Path(retold.citations[0].path).name == "honeybees.txt" and retold.citations[0].quote.isascii()
    assert answer.usage.steps["retell"].calls == 2


CHINESE = {
    "大熊猫.txt": "大熊猫是中国特有的熊科动物。大熊猫几乎只吃竹子，每天要花十多个小时进食。\n",
    "龙井茶.txt": "龙井茶是中国著名的绿茶，产于浙江杭州西湖一带，以色绿、香郁、味甘、形美著称。\n",
    "京沪高铁.txt": "京沪高速铁路全长1318公里，连接北京和上海，最高运营时速达到350公里。\n",
}


@pytest.fixture(scope="module")
def chinese_documents(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Application:
    folder = tmp_path_factory.mktemp("chinese")
    for name, text in CHINESE.items():
        (folder / name).write_text(text, encoding="utf-8")
    home = tmp_path_factory.mktemp("home")
    application = create_app(Settings(home=home, **lasting_settings(home)), embedder=real_embedder)
    application.ingest([folder])
    return application


def test_an_english_question_over_a_chinese_document_cites_the_chinese_text(
    chinese_documents: Application,
) -> None:
    # No word of the question is in the documents: e5's list finds them, e5 reads the sentences,
    # and the question's names ("Beijing") do not decline it for being in no document.
    answer = answered(chinese_documents, "How long is the Beijing-Shanghai high-speed railway?")
    assert not answer.abstained and answer.citations
    first = answer.citations[0]
    assert Path(first.path).name == "京沪高铁.txt"
    assert "1318公里" in first.quote and first.quote in CHINESE["京沪高铁.txt"]


def test_an_english_question_the_chinese_documents_do_not_answer_is_declined(
    chinese_documents: Application,
) -> None:
    answer = answered(chinese_documents, "What is the capital of France?")
    assert answer.abstained and not answer.citations
