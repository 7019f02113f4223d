"""Keyword terms for Chinese, Japanese and Korean text, which has no spaces between words.

FTS5's unicode61 tokenizer would make a whole CJK run one token, so a word inside
it could never match. Such runs are indexed, in a column of their own, as their
characters and overlapping character pairs (bigrams); a query run becomes its
bigrams, which match in any order. Text without CJK characters gets no grams.
"""

from __future__ import annotations

import re

# Hiragana, katakana, CJK ideographs (with extension A and compatibility forms), Hangul.
_CJK_CLASS = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")


def cjk_runs(text: str) -> list[str]:
    return _CJK_RUN.findall(text)


def without_cjk(text: str) -> str:
    """`text` with its CJK runs replaced by spaces, so the words beside them stand alone."""
    return _CJK_RUN.sub(" ", text)


def index_grams(text: str) -> str:
    """Every CJK character and character pair of `text`, space-separated, for the grams column."""
    grams: list[str] = []
    for run in cjk_runs(text):
        grams.extend(run)
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(grams)


def query_grams(text: str) -> list[str]:
    """Bigrams of each CJK run in a query (a one-character run stays itself), in order, unique."""
    grams: list[str] = []
    for run in cjk_runs(text):
        grams.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return list(dict.fromkeys(grams))
