"""Turning free text into a safe FTS5 query.

User text never reaches FTS5 syntax: every term is quoted, so quotes, `NEAR`,
`*`, `-` and parentheses are searched as plain words.
"""

from __future__ import annotations

import re

from footnote.core.cjk import query_grams, without_cjk
from footnote.core.stopwords import CHINESE_QUERY_STOP_WORDS, QUERY_STOP_WORDS

_TERM = re.compile(r"\w+", re.UNICODE)
# Function words and question words match nearly every chunk and only dilute BM25.
STOP_WORDS = QUERY_STOP_WORDS
CHINESE_STOP_WORDS = CHINESE_QUERY_STOP_WORDS
MAX_TERMS = 64
GRAMS_COLUMN = "grams"


def keyword_phrases(text: str) -> list[tuple[str | None, str]]:
    """The phrases a keyword search for `text` looks up, each with the column it is limited to.

    Words (stop words dropped unless nothing else is left) are searched in every column;
    Chinese, Japanese and Korean runs become character bigrams, searched in the grams column.
    """
    terms = [t.lower() for t in _TERM.findall(without_cjk(text))]
    every_gram = query_grams(text)
    grams = ([g for g in every_gram if g not in CHINESE_STOP_WORDS] or every_gram)[:MAX_TERMS]
    content = [t for t in terms if t not in STOP_WORDS] or ([] if grams else terms)
    unique = list(dict.fromkeys(content))[:MAX_TERMS]
    phrases: list[tuple[str | None, str]] = [(None, term) for term in unique]
    phrases.extend((GRAMS_COLUMN, gram) for gram in grams)
    return phrases


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: an OR of the quoted phrases of `keyword_phrases(text)`."""
    phrases = keyword_phrases(text)
    words = [f'"{phrase}"' for column, phrase in phrases if column is None]
    grams = [f'"{phrase}"' for column, phrase in phrases if column == GRAMS_COLUMN]
    if grams:
        words.append(f"{GRAMS_COLUMN} : ({' OR '.join(grams)})")
    return " OR ".join(words)
