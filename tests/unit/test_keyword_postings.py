"""The in-memory keyword postings rank exactly as FTS5's bm25() and follow the catalog."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.core.document import Block, Document
from footnote.core.filters import SearchFilter
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval import postings
from footnote.retrieval.keyword import fts_query, keyword_phrases
from footnote.retrieval.postings import Fts5Tokenizer, MemoryKeywordIndex
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.store.catalog import Catalog
from footnote.store.migrations import KEYWORD_TOKENIZER
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex
from tests.fakes import HashingEmbedder

SECTIONS = {
    "/notes/lighthouses.md": (
        "Lighthouses",
        [
            (("Lenses",), "Fresnel lenses focus the lamp's light into a beam seen far out at sea."),
            (("Lenses", "Orders"), "A first-order Fresnel lens is the largest; lighthouses used them."),
            (("Keepers",), "Keepers trimmed the wicks and wound the clockwork that turned the lens."),
        ],
    ),
    "/notes/coffee.md": (
        "Coffee",
        [
            (("Origins",), "Coffee plants grew wild in Ethiopia; the beans are roasted seeds."),
            (("Brewing",), "Brewing coffee extracts oils; a café in Zürich roasts its own beans."),
        ],
    ),
    "/notes/panda.md": (
        "大熊猫",
        [
            (("生活",), "大熊猫主要生活在中国四川的山区，以竹子为食。Pandas eat bamboo."),
            (("保护",), "竹林保护区让熊猫的数量慢慢增加。"),
            (("数量",), "2021年野生大熊猫有1864只，受威胁等级从濒危降为易危。"),
        ],
    ),
}
QUERIES = [
    "Fresnel lens",
    "lighthouse keepers turned the lens",
    "coffee beans roasted",
    "cafe zurich",
    "Lenses orders",
    "熊猫 竹子",
    "竹子熊猫 bamboo",
    "大熊猫吃什么",  # a question word among the Chinese words
    "野生大熊猫有多少只",
    "1864",  # a number written against Chinese text
    "熊",  # one character, inside the word 熊猫
    "the",
    "words that are nowhere",
]


def document(path: str, title: str, sections: list[tuple[tuple[str, ...], str]]) -> Document:
    text, blocks = "", []
    for heading_path, body in sections:
        blocks.append(Block(body, len(text), len(text) + len(body), heading_path=heading_path))
        text += body + "\n\n"
    return Document(path, "markdown", title, text, blocks)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Catalog, Ingestor]]:
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "vectors", embedder.name, embedder.dimension)
    ingestor = Ingestor(catalog, vectors, embedder, chunk_tokens=24, chunk_overlap=0)
    ingestor.ingest_documents(document(path, *content) for path, content in SECTIONS.items())
    yield catalog, ingestor
    catalog.close()


def assert_same_ranking(index: MemoryKeywordIndex, catalog: Catalog, query: str) -> None:
    memory = index.search(keyword_phrases(query), 50)
    assert memory is not None, query
    fts5 = catalog.keyword_search(fts_query(query), 50)
    assert [chunk_id for chunk_id, _ in memory] == [chunk_id for chunk_id, _ in fts5], query
    for (_, ours), (_, theirs) in zip(memory, fts5, strict=True):
        assert math.isclose(ours, theirs, rel_tol=1e-9), query


def delete_and_catch_up(index: MemoryKeywordIndex, catalog: Catalog, path: str) -> None:
    record = catalog.document_by_path(path)
    assert record is not None
    catalog.delete_document(record.id)
    index.sync()


def test_scores_and_order_equal_fts5_bm25(store: tuple[Catalog, Ingestor]) -> None:
    catalog, _ = store
    index = MemoryKeywordIndex(catalog)
    index.sync()
    assert catalog.count_chunks() >= 7
    found = 0
    for query in QUERIES:
        assert_same_ranking(index, catalog, query)
        found += len(index.search(keyword_phrases(query), 50) or [])
    assert found > 10


def test_searching_without_fts5_ranks_as_fts5_with_words_of_one_stem(store: tuple[Catalog, Ingestor]) -> None:
    # A catalog without FTS5 (PostgreSQL) is searched with `search_now`; words the query
    # repeats in another form (one stem) must weigh as in FTS5, or the shared stores rank otherwise.
    catalog, _ = store
    index = MemoryKeywordIndex(catalog)
    for query in [*QUERIES, "lens lenses lighthouse", "coffee espresso coffees"]:
        now = index.search_now(keyword_phrases(query), 50)
        fts5 = catalog.keyword_search(fts_query(query), 50)
        assert [chunk_id for chunk_id, _ in now] == [chunk_id for chunk_id, _ in fts5], query
        for (_, ours), (_, theirs) in zip(now, fts5, strict=True):
            assert math.isclose(ours, theirs, rel_tol=1e-9), query


def test_changes_are_followed_after_a_catch_up(store: tuple[Catalog, Ingestor]) -> None:
    catalog, ingestor = store
    index = MemoryKeywordIndex(catalog)
    index.sync()
    title = SECTIONS["/notes/coffee.md"][0]
    changed = [(("Brewing",), "Espresso is brewed under pressure from finely ground coffee beans.")]
    ingestor.ingest_documents([document("/notes/coffee.md", title, changed)])
    # Behind the catalog: FTS5 answers (None) while the postings catch up in the background.
    assert index.search(keyword_phrases("espresso"), 10) is None
    index.sync()
    hits = index.search(keyword_phrases("espresso coffee"), 10)
    assert hits and {catalog.chunks([i])[i].path for i, _ in hits} == {"/notes/coffee.md"}
    for query in [*QUERIES, "espresso pressure"]:
        assert_same_ranking(index, catalog, query)

    delete_and_catch_up(index, catalog, "/notes/lighthouses.md")
    assert index.search(keyword_phrases("Fresnel lens"), 10) == []
    for query in QUERIES:
        assert_same_ranking(index, catalog, query)


def test_a_phrase_of_several_tokens_is_left_to_fts5(store: tuple[Catalog, Ingestor]) -> None:
    catalog, _ = store
    index = MemoryKeywordIndex(catalog)
    index.sync()
    assert index.search(keyword_phrases("first_order lens"), 10) is None


def test_the_tokenizer_is_the_keyword_index_tokenizer(store: tuple[Catalog, Ingestor]) -> None:
    catalog, _ = store
    sql = catalog._db.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    assert f"tokenize = '{KEYWORD_TOKENIZER}'" in sql
    assert Fts5Tokenizer().terms(["Café lighthouses, RUNNING", "", "ÉTÉ_2024 x"]) == [
        ["cafe", "lighthous", "run"],
        [],
        ["et", "2024", "x"],
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Don't split-words like e-mail; 3.14 and 1,000 ok?",
        "naïve coöperation — Ångström's œuvre; ﬁnance ＡＢＣ",
        "snake_case_words, x²+y², ¼ cup, №5, 🙂 emoji🙂here",
        "中文混合English文本 かなカナ 한국어 tab\there\nnewline",
        "Greek λόγος Cyrillic Москва Arabic مرحبا Hindi नमस्ते",
    ],
)
def test_words_split_as_fts5_splits_them(text: str) -> None:
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{KEYWORD_TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.execute("INSERT INTO t (x) VALUES (?)", (text,))
    expected = [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]
    assert Fts5Tokenizer().terms([text]) == [expected]


def test_the_retriever_uses_the_postings_and_fts5_for_filters(store: tuple[Catalog, Ingestor]) -> None:
    catalog, ingestor = store
    index = MemoryKeywordIndex(catalog)
    index.sync()
    plain = HybridRetriever(catalog, ingestor.vectors, ingestor.embedder)
    fast = HybridRetriever(catalog, ingestor.vectors, ingestor.embedder, keyword_index=index)
    for mode in ("keyword", "hybrid"):
        params = RetrievalParams(limit=10, mode=mode)
        for query in QUERIES[:6]:
            assert [h.chunk_id for h in fast.search(query, params)] == [
                h.chunk_id for h in plain.search(query, params)
            ]
    coffee = SearchFilter(include_paths=("/notes/coffee*",))
    only_coffee = RetrievalParams(limit=10, mode="keyword", filters=coffee)
    assert {h.path for h in fast.search("coffee lens", only_coffee)} == {"/notes/coffee.md"}


def test_saved_postings_are_reloaded_and_brought_up_to_date(
    store: tuple[Catalog, Ingestor], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog, ingestor = store
    monkeypatch.setattr(postings, "SAVE_AFTER_ROWS", 1)
    path = tmp_path / "postings.npz"
    first = MemoryKeywordIndex(catalog, path)
    first.sync()
    assert path.exists()
    saved = path.stat().st_mtime_ns
    before = set(catalog.chunk_id_list())
    bamboo = document("/notes/bamboo.md", "竹", [(("竹子",), "Bamboo grows fast; 竹子长得快。")])
    ingestor.ingest_documents([bamboo])

    reloaded = MemoryKeywordIndex(catalog, path)
    tokenized: list[int] = []
    add = reloaded._add
    monkeypatch.setattr(reloaded, "_add", lambda rows: (tokenized.extend(r[0] for r in rows), add(rows)))
    reloaded.sync()
    # Only the new document's chunks were tokenized: the rest came from the file.
    assert tokenized and sorted(tokenized) == sorted(set(catalog.chunk_id_list()) - before)
    assert path.stat().st_mtime_ns >= saved
    for query in [*QUERIES, "bamboo grows"]:
        assert_same_ranking(reloaded, catalog, query)
    delete_and_catch_up(reloaded, catalog, "/notes/coffee.md")
    for query in [*QUERIES, "bamboo grows", "coffee"]:
        assert_same_ranking(reloaded, catalog, query)


def test_an_unreadable_postings_file_is_rebuilt(store: tuple[Catalog, Ingestor], tmp_path: Path) -> None:
    catalog, _ = store
    path = tmp_path / "postings.npz"
    path.write_bytes(b"not a numpy file")
    index = MemoryKeywordIndex(catalog, path)
    index.sync()
    for query in QUERIES:
        assert_same_ranking(index, catalog, query)


def test_equal_scores_at_the_cut_keep_the_lowest_ids_as_fts5_does(tmp_path: Path) -> None:
    # Chunks that score alike (same words, same length) are cut at `limit` by chunk id, as FTS5's
    # ORDER BY rank, rowid cuts them, whatever order the postings hold their rows in.
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "vectors", embedder.name, embedder.dimension)
    ingestor = Ingestor(catalog, vectors, embedder, chunk_tokens=24, chunk_overlap=0)
    alike = [(("Tides",), "Spring tides follow the new and the full moon.")]
    better = [(("Tides",), "Spring tides and neap tides: tides follow the moon.")]
    ingestor.ingest_documents(
        document(f"/notes/tides-{number:02d}.md", "Tides", better if number % 7 == 0 else alike)
        for number in range(50)
    )
    try:
        index = MemoryKeywordIndex(catalog)
        index.sync()
        for limit in (3, 10, 20):
            memory = index.search(keyword_phrases("tides"), limit)
            fts5 = catalog.keyword_search(fts_query("tides"), limit)
            assert memory is not None
            assert [chunk_id for chunk_id, _ in memory] == [chunk_id for chunk_id, _ in fts5], limit
            assert [i for i, _ in index.search_now(keyword_phrases("tides"), limit)] == [i for i, _ in fts5]
    finally:
        catalog.close()


class CatalogWithoutKeywordIndex(SqliteCatalog):
    """A catalog that, like the shared PostgreSQL one, keeps no keyword index of its own."""

    searches_keywords = False


def test_a_retriever_over_a_catalog_without_a_keyword_index_searches_postings_it_builds(
    tmp_path: Path,
) -> None:
    catalog = CatalogWithoutKeywordIndex(tmp_path / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(tmp_path / "vectors", embedder.name, embedder.dimension)
    ingestor = Ingestor(catalog, vectors, embedder, chunk_tokens=24, chunk_overlap=0)
    ingestor.ingest_documents(document(path, *content) for path, content in SECTIONS.items())
    retriever = HybridRetriever(catalog, vectors, embedder)
    try:
        hits = retriever.search("lighthouse lens", RetrievalParams(limit=3, mode="keyword"))
        unknown = retriever.unknown_words(["lighthouse", "zeppelin"])
    finally:
        catalog.close()

    assert hits and "lighthouse" in hits[0].text.lower()
    assert unknown == ["zeppelin"]
