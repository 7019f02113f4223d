"""Chinese, Japanese and Korean text is findable by keyword: Chinese words, kana and Hangul
character pairs, in a grams column."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.core.cjk import index_grams, query_grams, without_cjk
from footnote.core.document import Block, Document
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval.keyword import fts_query
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.migrations import MIGRATIONS, migrate
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.fakes import HashingEmbedder

TEXTS = {
    "/docs/pandas.txt": "大熊猫主要生活在中国四川的山区，以竹子为食。",
    "/docs/tea.txt": "绿茶起源于中国，龙井茶产自杭州西湖。",
    "/docs/tokyo.txt": "東京タワーは東京都港区にある電波塔です。",
    "/docs/seoul.txt": "서울은 대한민국의 수도이며 한강이 흐른다.",
    "/docs/english.txt": "Bamboo forests in the mountains feed the giant panda.",
    "/docs/rcep.txt": "RCEP协定于2022年1月1日生效。",
}


def _document(path: str, text: str) -> Document:
    return Document(path, "text", "", text, [Block(text, 0, len(text))])


@pytest.fixture
def retriever(tmp_path: Path) -> Iterator[HybridRetriever]:
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "vectors", embedder.name, embedder.dimension)
    Ingestor(catalog, vectors, embedder).ingest_documents(_document(p, t) for p, t in TEXTS.items())
    yield HybridRetriever(catalog, vectors, embedder)
    catalog.close()


def keyword_paths(retriever: HybridRetriever, query: str) -> list[str]:
    return [hit.path for hit in retriever.search(query, RetrievalParams(limit=10, mode="keyword"))]


def test_chinese_grams_are_words_and_characters() -> None:
    assert index_grams("abc 中国茶 xyz 水") == "中国 中 国 茶 水"
    assert index_grams("no CJK here") == ""
    assert query_grams("中国茶 水 中国") == ["中国", "茶", "水"]
    assert without_cjk("Python编程 rocks").split() == ["Python", "rocks"]


def test_a_long_chinese_word_also_gives_the_words_inside_it() -> None:
    grams = index_grams("中华人民共和国成立").split()

    assert {"中华人民共和国", "中华", "人民", "共和国", "成立"} <= set(grams)
    assert set("中华人民共和国成立") <= set(grams)


def test_kana_and_hangul_grams_are_characters_and_pairs() -> None:
    assert index_grams("東京タワー") == "東京 東 京 タワ ワー タ ワ ー"
    assert query_grams("タワー 한강") == ["タワ", "ワー", "한강"]


def test_a_chinese_word_inside_a_sentence_is_found(retriever: HybridRetriever) -> None:
    assert keyword_paths(retriever, "竹子") == ["/docs/pandas.txt"]
    assert keyword_paths(retriever, "龙井茶")[0] == "/docs/tea.txt"


def test_a_chinese_query_in_another_word_order_is_found(retriever: HybridRetriever) -> None:
    # The text says 大熊猫 ... 竹子 ... 四川; the query puts the words the other way round.
    found = keyword_paths(retriever, "四川竹子大熊猫")

    assert found[0] == "/docs/pandas.txt"


def test_a_shared_word_ranks_the_better_match_first(retriever: HybridRetriever) -> None:
    # Both Chinese texts contain 中国; only one is about tea from Hangzhou.
    found = keyword_paths(retriever, "杭州的中国绿茶")

    assert found[0] == "/docs/tea.txt"
    assert set(found) == {"/docs/tea.txt", "/docs/pandas.txt"}


def test_japanese_and_korean_are_found(retriever: HybridRetriever) -> None:
    assert keyword_paths(retriever, "電波塔")[0] == "/docs/tokyo.txt"
    assert keyword_paths(retriever, "한강")[0] == "/docs/seoul.txt"


def test_a_single_character_query_finds_the_character(retriever: HybridRetriever) -> None:
    assert keyword_paths(retriever, "竹") == ["/docs/pandas.txt"]


def test_mixed_queries_search_both_scripts(retriever: HybridRetriever) -> None:
    found = keyword_paths(retriever, "panda 竹子")

    assert set(found) == {"/docs/pandas.txt", "/docs/english.txt"}


def test_numbers_and_latin_words_written_against_chinese_are_words_of_their_own(
    retriever: HybridRetriever,
) -> None:
    assert keyword_paths(retriever, "2022") == ["/docs/rcep.txt"]
    assert keyword_paths(retriever, "RCEP") == ["/docs/rcep.txt"]


def test_english_queries_do_not_match_cjk_text(retriever: HybridRetriever) -> None:
    assert keyword_paths(retriever, "giant panda") == ["/docs/english.txt"]


@pytest.mark.parametrize("query", ["中国 NEAR 茶", '"中国', "中国*", "-中国", "grams:中国", "ㄅㄆ ꀀꀁ ᚠᚢ"])
def test_hostile_or_unknown_script_queries_never_raise(retriever: HybridRetriever, query: str) -> None:
    assert isinstance(keyword_paths(retriever, query), list)
    assert isinstance(retriever.search(query, RetrievalParams(limit=3)), list)


def test_the_query_searches_grams_in_their_own_column() -> None:
    assert fts_query("中国茶 tea") == '"tea" OR grams : ("中国" OR "茶")'
    assert fts_query("what is 中国") == 'grams : ("中国")'  # stop words are not needed beside it


def test_migration_2_backfills_grams_of_chunks_stored_before_it(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "old.sqlite3", isolation_level=None)
    db.executescript(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
        "applied_at REAL NOT NULL);" + "BEGIN;" + MIGRATIONS[0][2] + "COMMIT;"
    )
    db.execute("INSERT INTO schema_migrations VALUES (1, 'v1', 0)")
    db.execute(
        "INSERT INTO documents (path, content_hash, format, title, size, mtime, text, ingested_at) "
        "VALUES ('/a.txt', 'h', 'text', '标题', 1, 0, '熊猫吃竹子', 0)"
    )
    db.execute(
        "INSERT INTO chunks (document_id, ordinal, text, start, end, heading_path, token_count) "
        "VALUES (1, 0, '熊猫吃竹子', 0, 5, '[\"第一章\"]', 5)"
    )
    db.close()

    catalog = SqliteCatalog(tmp_path / "old.sqlite3")
    try:
        assert catalog.schema_version == MIGRATIONS[-1][0]
        assert [chunk_id for chunk_id, _ in catalog.keyword_search(fts_query("竹子"), 5)] == [1]
        assert [chunk_id for chunk_id, _ in catalog.keyword_search(fts_query("第一章"), 5)] == [1]
    finally:
        catalog.close()
    with sqlite3.connect(tmp_path / "old.sqlite3") as check:
        assert migrate(check) == MIGRATIONS[-1][0]


def test_migration_4_stores_languages_and_makes_chinese_grams_words(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "v3.sqlite3", isolation_level=None)
    db.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
        "applied_at REAL NOT NULL)"
    )
    # A catalog as schema 3 left it, with the character-pair grams of that time.
    db.create_function("footnote_cjk_grams", 1, lambda text: " ".join(text), deterministic=True)
    for version, _, script in MIGRATIONS[:3]:
        db.executescript("BEGIN;" + script + "COMMIT;")
        db.execute("INSERT INTO schema_migrations VALUES (?, 'old', 0)", (version,))
    for number, text in enumerate(
        ("大熊猫主要生活在四川的山区，以竹子为食。", "Pandas eat bamboo."), start=1
    ):
        db.execute(
            "INSERT INTO documents (path, content_hash, format, title, size, mtime, text, ingested_at) "
            f"VALUES ('/{number}.txt', 'h', 'text', '', 1, 0, ?, 0)",
            (text,),
        )
        db.execute(
            "INSERT INTO chunks (document_id, ordinal, text, start, end, heading_path, token_count) "
            "VALUES (?, 0, ?, 0, ?, '[]', 5)",
            (number, text, len(text)),
        )
    db.execute(
        "INSERT INTO chunks_fts (rowid, text, heading, title, grams) SELECT id, text, '', '', '' FROM chunks"
    )
    db.close()

    catalog = SqliteCatalog(tmp_path / "v3.sqlite3")
    try:
        assert catalog.schema_version == MIGRATIONS[-1][0]  # migration 4, and every one since
        assert catalog.chunk_languages([1, 2]) == {1: "zh", 2: "en"}
        assert catalog.chunks([1])[1].language == "zh"
        assert catalog.generation() == 1  # in-memory postings built before see the new grams
        assert [chunk_id for chunk_id, _ in catalog.keyword_search(fts_query("竹子"), 5)] == [1]
        assert [chunk_id for chunk_id, _ in catalog.keyword_search(fts_query("bamboo"), 5)] == [2]
    finally:
        catalog.close()
    with sqlite3.connect(tmp_path / "v3.sqlite3") as check:
        grams = check.execute("SELECT grams FROM chunks_fts WHERE rowid = 1").fetchone()[0]
    assert {"大熊猫", "四川", "竹子"} <= set(grams.split())


def test_new_chunks_store_their_language(retriever: HybridRetriever) -> None:
    ids = retriever.catalog.chunk_id_list()
    records = retriever.catalog.chunks(ids)

    assert {records[i].path: records[i].language for i in ids} == {
        "/docs/pandas.txt": "zh",
        "/docs/tea.txt": "zh",
        "/docs/tokyo.txt": "ja",
        "/docs/seoul.txt": "ko",
        "/docs/english.txt": "en",
        "/docs/rcep.txt": "zh",
    }
