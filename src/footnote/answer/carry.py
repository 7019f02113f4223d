"""Carrying a question into the documents' language: a Chinese question over English manuals is
put into English by the model that answers Chinese, and then searched, read and answered as an
English question is, by the English sentence reader, the shape model and the points. The
answer starts with a notice, in the question's language, that names the English question.

The multilingual embedder reads a Chinese question beside English sentences well enough to
find its documents but not to pick its passage: it ranks first the sentences sharing the
question's Latin words. Measured by `benchmarks/across_languages.py` (docs/benchmarks.md,
"Chinese questions over English documents").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from footnote.answer.usage import CARRY_STEP, MeteredGenerator, TokenUsage
from footnote.core.cjk import count_words, has_cjk
from footnote.core.hits import SearchHit
from footnote.core.language import ENGLISH, reads
from footnote.models.base import GenerationParams, Generator, Message

if TYPE_CHECKING:
    from footnote.answer.engine import AnswerEngine

# Examples on things no evaluation set is about; the third, with no word in Latin letters, keeps
# the 0.5B model from leaving Chinese words untranslated ("How does蜜蜂 communicate?").
_INSTRUCTION = (
    "Translate the user's question about software documentation into English. Keep every "
    "command, option, file name, number and quoted text exactly as written, and keep every "
    "detail the question asks for. Translate every Chinese word. Reply with the English "
    "question alone, on one line."
)
_EXAMPLES = (
    (
        "git 怎样撤销最后一次提交，但保留工作区里的改动？",
        "How do I undo the last git commit but keep the changes in the working tree?",
    ),
    ("docker run 的 --rm 选项有什么作用？", "What does the --rm option of docker run do?"),
    ("猫为什么喜欢晒太阳？", "Why do cats like to lie in the sun?"),
)
# The longest translation taken, in words of the question (each CJK character one): a reply
# longer than that answers or explains instead of translating.
MOST_WORDS_PER_WORD = 3
_PARAMS = GenerationParams(max_tokens=64, temperature=0.0, stop=("\n",))


def carry_messages(question: str) -> list[Message]:
    """The chat that asks for `question` in English."""
    messages = [Message("system", _INSTRUCTION)]
    for asked, carried in _EXAMPLES:
        messages += [Message("user", asked), Message("assistant", carried)]
    return [*messages, Message("user", question)]


def first_line(reply: str) -> str:
    """The first line of a model's reply that holds anything, stripped."""
    return next((line.strip() for line in reply.splitlines() if line.strip()), "")


def carried_into_english(generator: Generator, question: str) -> str | None:
    """`question` in English as `generator` puts it; None when its reply is not one English
    question: empty, still holding CJK text, not ending with a question mark (a date or a
    statement in its place), or running far longer than the question."""
    reply = generator.generate(carry_messages(question), _PARAMS)
    carried = first_line(reply).strip("\"'“”")
    if not carried.endswith("?") or has_cjk(carried):
        return None
    if count_words(carried) > MOST_WORDS_PER_WORD * max(count_words(question), 4):
        return None
    return carried


def carried_question(
    engine: AnswerEngine, language: str, question: str, hits: Sequence[SearchHit], usage: TokenUsage
) -> str | None:
    """`question` (asked in `language`) in English, put there by the engine's model (counted
    under "carry"), when the sentence reader does not read the question but reads English and
    most of `hits` are not in the question's language: English ones, or none found, its words
    meeting none of the documents'. None otherwise, or when the model's reply is not one English
    question."""
    reader = engine.support.reader
    if (
        not engine.policy.carry_questions
        or reader is None
        or reads(reader.languages, language)
        or not reads(reader.languages, ENGLISH)
    ):
        return None
    if hits and 2 * sum(hit.language == language for hit in hits) >= len(hits):
        return None
    return carried_into_english(MeteredGenerator(engine.generator, usage, CARRY_STEP), question)
