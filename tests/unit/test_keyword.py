"""Free text becomes a safe FTS5 query: user text never reaches FTS5 syntax."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.core.document import Chunk, Document
from footnote.core.span import Span
from footnote.retrieval.keyword import MAX_TERMS, STOP_WORDS, fts_query
from footnote.store.catalog import Catalog
from footnote.store.sqlite import SqliteCatalog

# One chunk per line: each holds words that are FTS5 operators or look like them.
CHUNK_TEXTS = [
    "The lighthouse stands near the harbour wall.",  # 0: "near"
    "Apples and pears grow in the orchard.",  # 1: "and", "pears"
    "Applesauce is cooked slowly.",  # 2: only a word that "apple*" would prefix-match
    "Choose this or that colour.",  # 3: "or"
    "A title: the caret sign ^ and the star sign * are shown.",  # 4: "title", "caret", "star"
    "Crème brûlée needs a hot grill.",  # 5: diacritics
]


def _document(texts: list[str]) -> tuple[Document, list[Chunk]]:
    text = "\n\n".join(texts)
    chunks = []
    start = 0
    for ordinal, chunk_text in enumerate(texts):
        chunks.append(Chunk(ordinal, chunk_text, Span(start, start + len(chunk_text)), token_count=8))
        start += len(chunk_text) + 2
    return Document("/docs/words.md", "markdown", "Assorted words", text), chunks


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite3")
    document, chunks = _document(CHUNK_TEXTS)
    catalog.replace_document(document, "hash", 1, 0.0, chunks)
    yield catalog
    catalog.close()


def ordinals_found(catalog: Catalog, match: str) -> set[int]:
    ids = [chunk_id for chunk_id, _ in catalog.keyword_search(match, 50)]
    return {record.ordinal for record in catalog.chunks(ids).values()}


HOSTILE_QUERIES = [
    '"near',
    'harbour"',
    "NEAR(lighthouse harbour)",
    "NEAR",
    "apple*",
    "-pears",
    "pears -apples",
    "(orchard",
    "orchard)",
    "orchard AND",
    "OR colour",
    "AND OR NOT",
    "^caret",
    "title:caret",
    "star:",
    ":",
    "{title}: star",
    '"unbalanced (quotes and NEAR/3 * ^ : -',
    "col1 + col2 ^ 'x' \\ / ; -- DROP TABLE chunks",
]


@pytest.mark.parametrize("text", HOSTILE_QUERIES)
def test_hostile_text_never_makes_an_fts5_error(catalog: Catalog, text: str) -> None:
    match = fts_query(text)

    results = catalog.keyword_search(match, 10)

    assert isinstance(results, list)
    assert all(score > 0 for _, score in results)  # bm25 negated: higher is better


def test_the_hostile_texts_are_fts5_errors_when_used_raw(catalog: Catalog) -> None:
    # Guards the test above: these inputs really are broken FTS5 syntax.
    for text in ('"near', "orchard AND", "(orchard", "star:", ":", "-pears"):
        with pytest.raises(sqlite3.OperationalError):
            catalog.keyword_search(text, 10)


def test_every_term_is_quoted_and_joined_by_or() -> None:
    query = fts_query('"Apple" NEAR(orange) -pear* (kiwi) AND OR ^fig title:date')

    assert query == '"apple" OR "near" OR "orange" OR "pear" OR "kiwi" OR "fig" OR "title" OR "date"'


def test_operator_words_are_searched_literally(catalog: Catalog) -> None:
    assert ordinals_found(catalog, fts_query("NEAR")) == {0}
    assert ordinals_found(catalog, fts_query("NEAR(lighthouse orchard)")) == {0, 1}
    # Only stop words: they are kept, and "or" is the word, not the operator.
    assert fts_query("OR") == '"or"'
    assert ordinals_found(catalog, fts_query("OR")) == {3}


def test_minus_does_not_exclude(catalog: Catalog) -> None:
    assert ordinals_found(catalog, fts_query("orchard -pears")) == {1}
    assert ordinals_found(catalog, fts_query("-colour")) == {3}


def test_star_is_not_a_prefix_search(catalog: Catalog) -> None:
    # Raw FTS5 `apple*` would also match "applesauce"; the quoted term only matches "apple(s)".
    assert ordinals_found(catalog, "apple*") == {1, 2}
    assert ordinals_found(catalog, fts_query("apple*")) == {1}


def test_colon_is_not_a_column_filter(catalog: Catalog) -> None:
    # Raw `title:caret` would search the title column only and find nothing.
    assert ordinals_found(catalog, "title:caret") == set()
    assert ordinals_found(catalog, fts_query("title:caret")) == {4}


def test_caret_and_parentheses_are_dropped(catalog: Catalog) -> None:
    assert ordinals_found(catalog, fts_query("^caret")) == {4}
    assert ordinals_found(catalog, fts_query("((grill))")) == {5}


def test_accented_words_match_through_the_tokenizer(catalog: Catalog) -> None:
    assert fts_query("Crème brûlée") == '"crème" OR "brûlée"'
    assert ordinals_found(catalog, fts_query("creme brulee")) == {5}


def test_stop_words_are_dropped() -> None:
    assert fts_query("What is the height of the lighthouse?") == '"height" OR "lighthouse"'


def test_only_stop_words_are_kept() -> None:
    assert fts_query("What is it?") == '"what" OR "is" OR "it"'
    assert all(term in STOP_WORDS for term in ("what", "is", "it"))


def test_terms_are_lower_cased_and_deduplicated_in_order() -> None:
    assert fts_query("Tide tide TIDE moon Moon") == '"tide" OR "moon"'


def test_a_ten_thousand_word_query_is_bounded(catalog: Catalog) -> None:
    words = [f"word{i}" for i in range(10_000)]

    query = fts_query(" ".join(words))

    terms = query.split(" OR ")
    assert len(terms) == MAX_TERMS
    assert terms == [f'"{word}"' for word in words[:MAX_TERMS]]
    assert catalog.keyword_search(query, 10) == []


def test_a_long_query_keeps_the_terms_that_matter(catalog: Catalog) -> None:
    query = fts_query("harbour " * 10_000)

    assert query == '"harbour"'
    assert ordinals_found(catalog, query) == {0}


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "!!! ... ??? () \"\" '' -- ** ^^ :: {} []"])
def test_empty_or_punctuation_only_text_gives_an_empty_query(catalog: Catalog, text: str) -> None:
    assert fts_query(text) == ""
    assert catalog.keyword_search(fts_query(text), 10) == []


def test_keyword_search_of_empty_match_is_empty(catalog: Catalog) -> None:
    assert catalog.keyword_search("", 10) == []
