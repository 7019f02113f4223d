"""What a question asks for, read from its words: the kind of token its answer holds (a year, a
version, a number, code, a name; `asked_kinds`), the values of that kind a sentence offers
(`asked_tokens`), how many sources agree on them (`agreement`), and how well the sources can answer
at all (`answerability`: the share of the question's terms covered by a sentence holding such a
token, and, for a question asking for a default, one stating it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from footnote.answer.sentence_spans import SentenceSpan, covered_weight, lead_in
from footnote.answer.terms import content_terms
from footnote.core.stopwords import CLAIM_STOP_WORDS

_ASKS_YEAR = re.compile(r"\b(?:what|which) year\b|^\s*when (?:was|did|were)\b", re.IGNORECASE)

_ASKS_VERSION = re.compile(r"\b(?:what|which)(?: [\w.+-]+){0,3} (?:version|release)\b", re.IGNORECASE)

_ASKS_NUMBER = re.compile(
    r"\bhow (?:many|much|long|large|big|deep|far|old|often|precise|fast|wide|high|small)\b"
    r"|\b(?:size|number|percentage|port|limit|level|range|exit status|return code|width|length|timeout"
    r"|seconds|bytes|depth|rounds|count)\b"
    r"|\b(?:at most|at least|maximum|minimum|oldest|newest|highest|lowest|earliest|latest)\b",
    re.IGNORECASE,
)

_ASKS_CODE = re.compile(
    r"\b(?:option|flag|switch|command|function|macro|variable|setting|method|call|directive|keyword"
    r"|parameter|operator|delimiters?|syntax|action|type|argument|define|constant|extension|class|module)\b"
    r"|\bhow (?:do|can|would|should) (?:i|you|one)\b",
    re.IGNORECASE,
)

# "What does exit status 2 mean?" names its number and asks for words.
_ASKS_MEANING = re.compile(
    r"\bwhat (?:does|do|did)\b.*\b(?:mean|indicate|stand for|signify|do)\b|\bwhat went wrong\b", re.IGNORECASE
)

# "By default, how many…", "…unless -B is given", "…if AccuracySec= is left unset": the answer is
# a default, so only a passage that states one can hold it.
_ASKS_DEFAULT = re.compile(
    r"\b(?:by default|default|defaults|unless|out of the box|left unset)\b"
    r"|\b(?:is|are) not (?:given|set|specified)\b|\b(?:when|if) (?:no|none|not)\b",
    re.IGNORECASE,
)

_STATES_DEFAULT = re.compile(
    r"\b(?:default(?:s|ed)?|otherwise|unless|omitted|unset|implied|implicit(?:ly)?)\b"
    r"|\b(?:if|when) (?:not|no|none)\b",
    re.IGNORECASE,
)

_ASKS_NAME = re.compile(r"^\s*who\b|\bwhose\b|\bwho (?:wrote|created|made|invented)\b", re.IGNORECASE)

_YEAR = re.compile(r"\b(?:1[5-9]|20)\d\d\b")

_VERSION = re.compile(r"\d+\.\d+")

# A section or list number ("4.", "6.6.1.", "2)") starting a line says where, not what.
_SECTION_NUMBER = re.compile(r"^\(?\d+(?:\.\d+)*[.)]?$")

# An option, identifier, assignment, call, constant, path or quoted literal.
_CODE = re.compile(r"^[-+]{1,2}\w|\w_\w|\w=|\w\(|[a-z][A-Z]|^[A-Z][A-Z0-9]{2,}$|`|\w/\w|\w\.\w|^['\"<$]|%")

_STRIP = ".,;:()[]{}\"'\u2018\u2019\u201c\u201d"


def asked_kinds(question: str) -> frozenset[str]:
    """What kind of token an answer to `question` holds: "year", "version", "number", "code" and/or "name"."""
    kinds: set[str] = set()
    if _ASKS_MEANING.search(question):
        return frozenset()
    if _ASKS_YEAR.search(question):
        kinds.add("year")
    elif _ASKS_VERSION.search(question):
        kinds.add("version")
    elif _ASKS_NUMBER.search(question):
        kinds.add("number")
    if _ASKS_CODE.search(question):
        kinds.add("code")
    if _ASKS_NAME.search(question):
        kinds.add("name")
    return frozenset(kinds)


def holds_asked_token(sentence: str, question: str, kinds: frozenset[str]) -> bool:
    """Whether `sentence` holds a token of one of `kinds` that `question` does not contain."""
    return bool(asked_tokens(sentence, question, kinds))


def asked_tokens(sentence: str, question: str, kinds: frozenset[str]) -> set[str]:
    """The tokens of one of `kinds` in `sentence` that `question` does not contain, lower-cased:
    the values an answer to `question` could be."""
    asked = question.lower()
    found: set[str] = set()
    for position, raw in enumerate(sentence.split()):
        word = raw.strip(_STRIP) or raw
        if word.lower() in asked or (position == 0 and _SECTION_NUMBER.match(raw)):
            continue
        if (
            ("year" in kinds and _YEAR.search(word))
            or ("version" in kinds and _VERSION.search(word))
            or ("number" in kinds and any(c.isdecimal() for c in word))
            or ("code" in kinds and _CODE.search(raw.strip(".,;:")))
            or ("name" in kinds and word[:1].isupper() and word[1:].islower())
        ):
            found.add(word.lower())
    return found


def agreement(question: str, sources: Sequence[int], texts: Sequence[str]) -> list[float]:
    """Per sentence (of source `sources[i]`, text `texts[i]`): the largest share of the other
    sources that also hold one of its candidate answer values. Sources that agree on a value
    are likelier to state the answer than one that stands alone (news passages about the same
    event; a value a manual repeats in several sections)."""
    kinds = asked_kinds(question)
    return agreement_of(sources, [asked_tokens(text, question, kinds) if kinds else set() for text in texts])


def agreement_of(sources: Sequence[int], values: Sequence[set[str]]) -> list[float]:
    """`agreement` of sentences whose candidate values (`asked_tokens`) are already found."""
    others = len(set(sources)) - 1
    if others < 1:
        return [0.0] * len(values)
    # A capitalised function word ("However", "In") is no value, however many sources hold it.
    named = [found - CLAIM_STOP_WORDS for found in values]
    by_source: dict[int, set[str]] = {}
    for source, found in zip(sources, named, strict=True):
        by_source.setdefault(source, set()).update(found)
    shares = []
    for source, found in zip(sources, named, strict=True):
        held = (sum(value in seen for other, seen in by_source.items() if other != source) for value in found)
        shares.append(max(held, default=0) / others)
    return shares


def answerability(
    question: str, sentences: Sequence[SentenceSpan], texts: Sequence[str], prose: bool = False
) -> float:
    """How well the sources can answer `question`: the best of `coverages`."""
    if not content_terms(question):
        return 1.0
    return max(coverages(question, sentences, texts, prose), default=0.0)


def coverages(
    question: str, sentences: Sequence[SentenceSpan], texts: Sequence[str], prose: bool = False
) -> list[float]:
    """How well each sentence can answer `question`: the weighted share of its terms that the
    sentence (with its paragraph's lead-in) covers, if it holds a token of the kind asked for (any
    sentence when the question asks for no particular kind) and, for a question asking for a
    default, if it states one or stands beside one; else 0. `prose`: an answer that may be told
    in words (a broad question's: a procedure, a summary, a comparison) is not held to code,
    while a number, year, version or name it asks for must still be there."""
    asked = content_terms(question)
    total = sum(asked.values())
    if not total:
        return [1.0] * len(sentences)
    kinds = asked_kinds(question) - {"code"} if prose else asked_kinds(question)
    by_position = {(s.source, s.position): s for s in sentences}
    defaults = _stating_default(sentences, texts) if _ASKS_DEFAULT.search(question) else None
    covered = []
    for index, (sentence, text) in enumerate(zip(sentences, texts, strict=True)):
        if (kinds and not holds_asked_token(text, question, kinds)) or (
            defaults is not None and index not in defaults
        ):
            covered.append(0.0)
        else:
            covered.append(covered_weight(asked, sentence, lead_in(sentence, by_position)) / total)
    return covered


def _stating_default(sentences: Sequence[SentenceSpan], texts: Sequence[str]) -> set[int]:
    """The sentences that state a default, or sit next to one in their paragraph ("-B size …
    Larger buffers cost memory. The default is 32768 bytes.")."""
    stating = {i for i, text in enumerate(texts) if _STATES_DEFAULT.search(text)}
    near = set(stating)
    for i in stating:
        for j in (i - 1, i + 1):
            beside = 0 <= j < len(sentences) and sentences[j].source == sentences[i].source
            if beside and sentences[j].paragraph == sentences[i].paragraph:
                near.add(j)
    return near
