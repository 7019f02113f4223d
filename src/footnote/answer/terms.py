"""Claim-bearing terms of a text: what citation checking and evidence selection compare.

Words are lower-cased, stop words dropped and suffixes stripped lightly; numbers and
capitalised words (other than the first) weigh more; CJK text yields character bigrams.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from footnote.core.cjk import CJK_CLASS as CJK_RANGES
from footnote.core.sentences import MARKER
from footnote.core.stopwords import CJK_CLAIM_STOP_CHARS as _CJK_STOP_CHARS
from footnote.core.stopwords import CLAIM_STOP_WORDS as _STOP_WORDS

# Numbers, names and code carry most of what makes a claim true or false: they weigh double.
# Code is options, identifiers, MIME types and paths ("-P", "--enable-fat", "GLIBCXX_FORCE_NEW",
# "audio/x-midi"), kept whole and case-sensitive besides their word pieces: "audio/midi" and
# "audio/x-midi" share every word yet name different things.
KEY_TERM_WEIGHT = 2.0
_CODE_TOKEN = re.compile(r"(?<![\w/.-])(?:--?[A-Za-z][\w-]*|[A-Za-z_][\w]*(?:[/_.=+-][\w]+)+)")

_PLAIN_COMPOUND = re.compile(r"[a-z]+(?:-[a-z]+)+")
_PIECE = re.compile(r"[^\W_]+")

_TOKEN = re.compile(
    rf"(?P<cjk>[{CJK_RANGES}]+)|(?P<number>\d+(?:[.,]\d+)*)|(?P<word>(?:(?![{CJK_RANGES}])[^\W\d_])+)"
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "ies", "ied", "edly", "ed", "es", "ly", "s")
_SIBILANT_ES = ("ses", "xes", "zes", "ches", "shes")


def content_terms(text: str) -> dict[str, float]:
    """The claim-bearing terms of `text` with their weights.

    Words are lower-cased, stop words dropped and suffixes stripped lightly; numbers and
    capitalised words (other than the first) weigh more; CJK text yields character bigrams.
    """
    terms: dict[str, float] = {}
    first_word = True
    for match in _TOKEN.finditer(text):
        if match.group("cjk"):
            for term in _cjk_terms(match.group("cjk")):
                terms.setdefault(term, 1.0)
        elif match.group("number"):
            terms[match.group("number").replace(",", "")] = KEY_TERM_WEIGHT
        else:
            word = match.group("word")
            is_name = word[0].isupper() and not first_word
            first_word = False
            lowered = word.lower()
            if len(lowered) < 2 or lowered in _STOP_WORDS:
                continue
            stem = _stem(lowered)
            terms[stem] = max(terms.get(stem, 0.0), KEY_TERM_WEIGHT if is_name else 1.0)
    for match in _CODE_TOKEN.finditer(text):
        terms[match.group().rstrip(".-")] = KEY_TERM_WEIGHT
    return terms


def named_words(text: str, names: bool = True) -> list[str]:
    """The words that name something in `text`: the pieces of its identifiers and options
    ("argparse.BooleanOptionalAction", "--enable-fat", "SYSTEMD_OFFLINE") and, with `names`, its
    all-capital and mixed-case words ("APNG", "NetworkManager").

    A question naming a thing no document mentions cannot be answered from them. Compounds of
    lower-case words ("memory-mapped") are paraphrase rather than names, so they are left out, and
    so are plain capitalised words ("Definitive", "Legend"): users misspell and paraphrase them,
    and on RGB questions they declined answerable questions whose passages spell them otherwise.
    """
    found: list[str] = []
    for match in _CODE_TOKEN.finditer(text):
        token = match.group().rstrip(".-")
        if _PLAIN_COMPOUND.fullmatch(token):
            continue
        found.extend(_PIECE.findall(token))
    if names:
        for match in _PIECE.finditer(text):
            word = match.group()
            if word[0].isupper() and any(c.isupper() for c in word[1:]):
                found.append(word)
    return [word for word in dict.fromkeys(found) if len(word) > 1 and not word.isdigit()]


def says_again(sentence: str, earlier: str) -> bool:
    """Whether `sentence` says nothing `earlier` does not: every one of its content terms
    (footnote markers aside) is already in `earlier` (a sentence that changes one word may
    contradict, and is checked, not hidden). A sentence with no content term never does."""
    claim = content_terms(MARKER.sub("", sentence))
    return bool(claim) and claim.keys() <= content_terms(MARKER.sub("", earlier)).keys()


def says_twice(sentences: Sequence[str]) -> bool:
    """Whether two of `sentences` say the same thing (either one says nothing the other does not)."""
    return any(
        says_again(later, sentences[i]) or says_again(sentences[i], later)
        for j, later in enumerate(sentences)
        for i in range(j)
    )


def lexical_support(claim: dict[str, float], span_terms: frozenset[str] | set[str]) -> float:
    """Weighted share of the claim's terms found in the span, in [0, 1]."""
    total = sum(claim.values())
    if total == 0:
        return 0.0
    return sum(weight for term, weight in claim.items() if term in span_terms) / total


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in _CJK_STOP_CHARS else [run]
    bigrams = (run[i : i + 2] for i in range(len(run) - 1))
    return [gram for gram in bigrams if not (gram[0] in _CJK_STOP_CHARS and gram[1] in _CJK_STOP_CHARS)]


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break
            if suffix == "es" and not word.endswith(_SIBILANT_ES):
                continue  # "tides" is "tide" + "s"
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    # "tide"/"tides", "cause"/"caused": drop a final e so both stem alike.
    return word[:-1] if len(word) > 3 and word.endswith("e") else word
