"""Chinese, Japanese and Korean characters, and the keyword terms of text without spaces between words.

FTS5's unicode61 tokenizer would make a whole CJK run one token, so a word inside
it could never match. Such runs are indexed, in a column of their own, as terms
made here:

- Chinese characters (Han runs) are cut into words by jieba's dictionary (rjieba, in
  its search mode, which also gives the shorter words inside a long one). The index
  holds every word of two or more characters and every single character; a query
  becomes its words, so a one-character word matches that character anywhere.
- Kana and Hangul runs become their characters and overlapping character pairs
  (bigrams) in the index; a query run becomes its bigrams, which match in any order.

On the Chinese development set (`benchmarks/retrieval_chinese.py`) the words beat
character bigrams and characters with bigrams; text without CJK characters gets no terms.
"""

from __future__ import annotations

import re

# Han ideographs (with extension A and compatibility forms): the runs a dictionary segments.
HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Hiragana and katakana, and Hangul: runs of these are cut into character pairs.
KANA_CLASS = "\u3040-\u30ff\u31f0-\u31ff"
HANGUL_CLASS = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
# Every CJK character, for a regex character class: what search, citation checking, answer
# rendering and related questions all mean by "CJK" (one definition, the widest of those used).
CJK_CLASS = f"{HAN_CLASS}{KANA_CLASS}{HANGUL_CLASS}"
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_WORD = re.compile(rf"[{CJK_CLASS}]|[^\W{CJK_CLASS}]+")
_SCRIPT_RUN = re.compile(f"(?P<han>[{HAN_CLASS}]+)|(?P<paired>[{KANA_CLASS}{HANGUL_CLASS}]+)")


def cjk_runs(text: str) -> list[str]:
    return _CJK_RUN.findall(text)


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def count_words(text: str) -> int:
    """Words of `text`, each CJK character counting as one."""
    return len(_WORD.findall(text))


def first_words(text: str, most: int) -> str:
    """`text` cut after its `most`-th word (each CJK character one), or whole if it has no more."""
    for number, word in enumerate(_WORD.finditer(text), start=1):
        if number == most:
            return text[: word.end()]
    return text


def without_cjk(text: str) -> str:
    """`text` with its CJK runs replaced by spaces, so the words beside them stand alone."""
    return _CJK_RUN.sub(" ", text)


def chinese_words(run: str) -> list[str]:
    """The dictionary words of a Han run, longer words followed by the words inside them."""
    import rjieba  # imported here: loading the dictionary takes 0.15 s, and most commands never need it

    return [word for word in rjieba.cut_for_search(run) if word.strip()]


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_grams(text: str) -> str:
    """The grams column of `text`: Chinese words and characters, kana and Hangul characters and pairs."""
    grams: list[str] = []
    for match in _SCRIPT_RUN.finditer(text):
        run = match.group()
        if match.lastgroup == "han":
            grams.extend(word for word in chinese_words(run) if len(word) > 1)
        else:
            grams.extend(_bigrams(run))
        grams.extend(run)
    return " ".join(grams)


def query_grams(text: str) -> list[str]:
    """The grams a query looks up: Chinese words, kana and Hangul bigrams (a lone character stays
    itself), in order, unique."""
    grams: list[str] = []
    for match in _SCRIPT_RUN.finditer(text):
        run = match.group()
        if match.lastgroup == "han":
            grams.extend(chinese_words(run))
        else:
            grams.extend([run] if len(run) == 1 else _bigrams(run))
    return list(dict.fromkeys(grams))
