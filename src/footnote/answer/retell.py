"""Retelling a carried answer in the asker's language: a Chinese question answered from English
passages gets, after the English quotes, the best-read quote put into Chinese by the model that
answers Chinese, citing it, shown only where the check supports it.

The check cannot count shared words across languages, so the Chinese text is checked by the
round trip: put back into English by the same model, it must be supported by the sources under
the English check every English sentence meets (word overlap and the embedder, against the
calibrated threshold), every number and Latin-letter word it holds ("--continue-at", "3072",
"ProxyJump") must be in the passage it cites or in the question, and it must be in the
question's language (a copy of the quote adds nothing). The model translates a passage far more
faithfully than it answers from one: asked to answer, its sentences mostly said something else
than the passage ("Larry Wall是James Clark的作者。"); measured by `benchmarks/retell_check.py` (retired)
(docs/benchmarks.md, "Answers retold in the asker's language").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from footnote.answer.carry import first_line
from footnote.answer.citations import AnswerSentence, CitationChecker
from footnote.core.cjk import count_words, has_cjk
from footnote.core.language import CHINESE, JAPANESE, KOREAN
from footnote.core.sentences import split_sentences, strip_markers
from footnote.models.base import GenerationParams, Generator, Message

CJK_LANGUAGES = frozenset({CHINESE, JAPANESE, KOREAN})
# One line: the quote in the question's language. Of a quote longer than `MOST_WORDS` only its
# first sentences within them are retold (`leading`): its translation would take seconds more than
# the answer.
RETOLD_PARAMS = GenerationParams(max_tokens=120, temperature=0.0, stop=("\n",))
MOST_WORDS = 60
BACK_PARAMS = GenerationParams(max_tokens=96, temperature=0.0, stop=("\n",))
# A number, or a word in Latin letters with what joins it to its parts ("ssh_config", "-C",
# "--continue-at", "v2.1"): what a retelling must copy, not invent.
_LITERAL = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_.+/=-]*")
_INSTRUCTION = {
    CHINESE: "把用户给的英文段落翻译成简体中文。命令、选项、文件名、代码和数字照原文保留。只回复译文，一行。",
}
_BACK = (
    "Translate the user's sentence into English, word for word. Keep every command, option, file "
    "name and number exactly as written. Reply with the English sentence alone, on one line."
)


def retells(language: str) -> bool:
    """Whether answers are retold in `language`."""
    return language in _INSTRUCTION


def retell_messages(language: str, quote: str) -> list[Message]:
    """The chat that asks for `quote` in `language`."""
    return [Message("system", _INSTRUCTION[language]), Message("user", quote)]


def back_messages(sentence: str) -> list[Message]:
    """The chat that asks for `sentence` in English."""
    return [Message("system", _BACK), Message("user", sentence)]


@dataclass(frozen=True)
class Retelling:
    """How a carried answer is retold: the question as asked, its language and the model that
    writes that language."""

    question: str
    language: str
    generator: Generator

    def sentences(self, quotes: Sequence[AnswerSentence], checker: CitationChecker) -> list[AnswerSentence]:
        """The best-read of `quotes` (the reader's score; the first of equals), as much of it as
        is retold (`leading`: a broad answer's point may be a run of several sentences), put into
        the asker's language, checked (`checked`): supported, it cites what supports it;
        unsupported, it is flagged."""
        best = leading(max(quotes, key=lambda quote: quote.score).text.removeprefix("- ")) if quotes else ""
        if not best:
            return []
        reply = self.generator.generate(retell_messages(self.language, best), RETOLD_PARAMS)
        text = strip_markers(first_line(reply))[0].strip()
        return [self.checked(text, checker)] if text else []

    def checked(self, text: str, checker: CitationChecker) -> AnswerSentence:
        """`text` checked by the round trip: in the asker's language, put back into English and
        supported there, its literals in what supports it or in the question."""
        unsupported = AnswerSentence(text, [], False, [], False)
        if not in_language(text, self.language):
            return unsupported
        english = self.in_english(text)
        if not english:
            return unsupported
        back = checker.check(english)
        if not back.is_claim:  # "the documents do not say", or a question: it retells nothing
            return unsupported
        cited = " ".join(citation.quote for citation in back.citations)
        if not back.supported or not literals_in(text, f"{cited} {self.question}"):
            return replace(unsupported, score=back.score)
        return AnswerSentence(text, back.citations, True, [], False, score=back.score)

    def in_english(self, text: str) -> str:
        """`text` put back into English by the model: its first line."""
        return first_line(self.generator.generate(back_messages(text), BACK_PARAMS))


def leading(quote: str) -> str:
    """What of `quote` is retold: the whole of it within `MOST_WORDS`, else its first sentences
    that fit (a broad answer's point may join several), else nothing."""
    if count_words(quote) <= MOST_WORDS:
        return quote
    kept = ""
    for _, end in split_sentences(quote):
        if count_words(quote[:end]) > MOST_WORDS:
            break
        kept = quote[:end]
    return kept.strip()


def literals_in(sentence: str, held: str) -> bool:
    """Whether every number and Latin-letter word of `sentence` is in `held` (case aside)."""
    folded = held.casefold()
    return all(literal.casefold() in folded for literal in _LITERAL.findall(sentence))


def in_language(text: str, language: str) -> bool:
    """Whether `text` is written in `language` (for Chinese: holds Chinese characters), not a
    copy of the English quote."""
    return has_cjk(text) if language in CJK_LANGUAGES else True
