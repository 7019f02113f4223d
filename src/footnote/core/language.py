"""The language of a chunk or a query, told apart by script, and who can read it.

Retrievers do not read every language: the bundled MiniLM embedder was trained on
English, and its vectors of Chinese text are close to random. Each chunk's language is
stored in the catalog at ingest, each query's is found when it is asked, and fusion
gives a retriever its vote only where it reads both (`vote`).

Detection goes by script, which is what separates the languages retrieval treats
differently: Hangul is Korean, kana is Japanese, Han characters without kana are
Chinese, and other lettered text is taken as English (the embedders' language).
A CJK character counts as much as a Latin word, so a Chinese passage quoting an
English name stays Chinese. Text without letters has no language (`UNKNOWN`).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from footnote.core.cjk import HAN_CLASS, HANGUL_CLASS, KANA_CLASS, without_cjk

ENGLISH, CHINESE, JAPANESE, KOREAN = "en", "zh", "ja", "ko"
UNKNOWN = ""
_HANGUL = re.compile(f"[{HANGUL_CLASS}]")
_KANA = re.compile(f"[{KANA_CLASS}]")
_HAN = re.compile(f"[{HAN_CLASS}]")
_WORD = re.compile(r"[^\W\d_]+")


def detect_language(text: str) -> str:
    """`zh`, `ja`, `ko`, `en`, or `UNKNOWN` for text without letters."""
    hangul, kana, han = len(_HANGUL.findall(text)), len(_KANA.findall(text)), len(_HAN.findall(text))
    cjk = hangul + kana + han
    words = len(_WORD.findall(without_cjk(text)))
    if cjk == 0 and words == 0:
        return UNKNOWN
    if cjk < words:
        return ENGLISH
    if hangul >= kana + han:
        return KOREAN
    return JAPANESE if kana else CHINESE


def reads(languages: Collection[str] | None, language: str) -> bool:
    """Does a retriever reading `languages` (None: every language) read `language`?

    Text of no language (numbers, codes) is read by everyone."""
    return languages is None or language == UNKNOWN or language in languages


def vote(languages: Collection[str] | None, query: str, chunk: str, unread: float) -> float:
    """A retriever's vote on `chunk` for `query` (both languages): 1 where it reads both,
    `unread` otherwise."""
    return 1.0 if reads(languages, query) and reads(languages, chunk) else unread
