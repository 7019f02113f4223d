"""Turning free text into a safe FTS5 query.

User text never reaches FTS5 syntax: every term is quoted, so quotes, `NEAR`,
`*`, `-` and parentheses are searched as plain words.
"""

from __future__ import annotations

import re

from footnote.retrieval.cjk import query_grams, without_cjk

_TERM = re.compile(r"\w+", re.UNICODE)
# Common English function words: they match nearly every chunk and only dilute BM25.
STOP_WORDS = frozenset(
    """a an and are as at be but by can did do does for from had has have how i if in into is it its
    of on or so than that the their them then there these they this to was were what when where which
    who whom why will with would you your""".split()
)
# Chinese function and question words: a question's 哪些 or 多少 is not what its answer says.
CHINESE_STOP_WORDS = frozenset(
    """的 了 吗 呢 吧 啊 是 在 和 与 及 或 有 什么 哪些 哪个 哪里 哪 多少 几 谁 是谁 怎么 怎样 如何
    为什么 为何 何时""".split()
)
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
