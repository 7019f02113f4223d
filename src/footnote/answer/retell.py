"""Retelling a carried answer in the asker's language: a Chinese question answered from English
passages gets, after the English quotes, a sentence in Chinese written from them by the model
that answers Chinese, shown only where the check supports it.

The check cannot count shared words across languages, so a retold sentence is checked by the
round trip: put back into English by the same model, it must be supported by the sources under
the English check every English sentence meets (word overlap and the embedder, against the
calibrated threshold), and every number and Latin-letter word it holds ("--continue-at",
"3072", "ProxyJump") must be in the passage it cites or in the question. A sentence that is not
in the question's language (a copy of the quote) adds nothing and is not shown either. The
multilingual embedder's cosine was measured as the check first and told a sentence's own passage
from another of the same document too poorly (`benchmarks/retell_check.py`; docs/benchmarks.md,
"Answers retold in the asker's language").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from footnote.answer.citations import AnswerSentence, CitationChecker
from footnote.core.cjk import has_cjk
from footnote.core.sentences import split_sentences, strip_markers
from footnote.models.base import GenerationParams, Generator, Message

CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})
# One or two sentences: what the quotes say, not a second answer.
RETOLD_PARAMS = GenerationParams(max_tokens=96, temperature=0.0, stop=("\n",))
BACK_PARAMS = GenerationParams(max_tokens=96, temperature=0.0, stop=("\n",))
# A number, or a word in Latin letters with what joins it to its parts ("ssh_config", "-C",
# "--continue-at", "v2.1"): what a retelling must copy, not invent.
_LITERAL = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_.+/=-]*")
_INSTRUCTION = {
    "zh": (
        "用简体中文回答用户的问题，只写一到两句话，只用引用段落里说的内容。命令、选项、文件名和数字"
        "照原文抄写。不要添加段落里没有的内容。"
    ),
}
_BACK = (
    "Translate the user's sentence into English, word for word. Keep every command, option, file "
    "name and number exactly as written. Reply with the English sentence alone, on one line."
)


def retells(language: str) -> bool:
    """Whether answers are retold in `language`."""
    return language in _INSTRUCTION


def retell_messages(language: str, question: str, quotes: Sequence[str]) -> list[Message]:
    """The chat that asks for the answer to `question` in `language` from `quotes`."""
    passages = "\n".join(f"[{n}] {quote}" for n, quote in enumerate(quotes, start=1))
    return [
        Message("system", _INSTRUCTION[language]),
        Message("user", f"Passages:\n{passages}\n\nQuestion: {question}"),
    ]


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
        """The sentences the model writes in the asker's language from `quotes`, each checked
        (`checked`): a supported one cites what supports it; an unsupported one is flagged."""
        texts = [quote.text.removeprefix("- ") for quote in quotes]
        reply = self.generator.generate(retell_messages(self.language, self.question, texts), RETOLD_PARAMS)
        written = [strip_markers(reply[start:end])[0].strip() for start, end in split_sentences(reply)]
        return [self.checked(text, checker) for text in written if text]

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
        cited = " ".join(citation.quote for citation in back.citations)
        if not back.supported or not literals_in(text, f"{cited} {self.question}"):
            return replace(unsupported, score=back.score)
        return AnswerSentence(text, back.citations, True, [], False, score=back.score)

    def in_english(self, text: str) -> str:
        """`text` put back into English by the model: its first line."""
        reply = self.generator.generate(back_messages(text), BACK_PARAMS)
        return next((line.strip() for line in reply.splitlines() if line.strip()), "")


def literals_in(sentence: str, held: str) -> bool:
    """Whether every number and Latin-letter word of `sentence` is in `held` (case aside)."""
    folded = held.casefold()
    return all(literal.casefold() in folded for literal in _LITERAL.findall(sentence))


def in_language(text: str, language: str) -> bool:
    """Whether `text` is written in `language` (for Chinese: holds Chinese characters), not a
    copy of the English quote."""
    return has_cjk(text) if language in CJK_LANGUAGES else True
