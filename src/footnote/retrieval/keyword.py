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
MAX_TERMS = 64


def fts_query(text: str) -> str:
    """An OR of quoted terms from `text`, stop words dropped unless nothing else is left.

    Chinese, Japanese and Korean runs become character bigrams, matched in the grams column.
    """
    terms = [t.lower() for t in _TERM.findall(without_cjk(text))]
    grams = [f'"{gram}"' for gram in query_grams(text)[:MAX_TERMS]]
    content = [t for t in terms if t not in STOP_WORDS] or ([] if grams else terms)
    unique = list(dict.fromkeys(content))[:MAX_TERMS]
    words = [f'"{term}"' for term in unique]
    if grams:
        words.append(f"grams : ({' OR '.join(grams)})")
    return " OR ".join(words)
