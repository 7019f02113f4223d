"""Conversation history: reading it, keeping the last few turns, and condensing a follow-up.

A follow-up such as "and in 2019?" retrieves nothing on its own, so the model first rewrites
it into a standalone question from the recent turns; retrieval and checking use that question.
Most follow-ups people type name their subject, though, and rewriting those only loses words:
a follow-up is condensed only when it leans on the conversation (`leans_on_conversation`: it
names too little to be searched, or the conversation changes which document it finds). A
rewrite that is not a question keeping the follow-up's own words and adding some is not used
(`keeps_follow_up`; a small model asked to rewrite often answers instead): the last question
followed by the follow-up is searched in its place, and read too when the follow-up has few
words of its own. Over the follow-up benchmark's leaning follow-ups
(`benchmarks/follow_up_queries.py`, retired), fusing that search with the follow-up's own lost answers
(12 of 33 against 17): a follow-up is condensed only when its own search finds another document,
so the condensed question is searched alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from footnote.answer.policy import HISTORY_TURNS
from footnote.answer.terms import content_terms
from footnote.answer.usage import CONDENSE_STEP, MeteredGenerator, TokenUsage
from footnote.core.hits import SearchHit
from footnote.errors import FootnoteError
from footnote.models.base import GenerationParams, Generator, Message
from footnote.models.registry import rewrites_follow_ups

if TYPE_CHECKING:
    from footnote.answer.engine import AnswerEngine

# Characters of each kept message shown to the model; answers are short, sources are not repeated.
MAX_MESSAGE_CHARS = 600
CONDENSE_PROMPT = (
    "Rewrite the last question so it can be understood without the conversation. "
    "Keep names, dates and numbers. Reply with the question only."
)
_ROLES = ("user", "assistant")
# A follow-up with fewer claim-bearing terms than this names too little to stand alone
# ("And version 2?", "What is the default?").
MIN_OWN_TERMS = 2
# A follow-up set after the last question is read that way when it has at most this many
# claim-bearing terms of its own; with more, its own words find the sentence better and it is
# read as written. Chosen on the follow-up benchmark with each document held out in turn
# (2 on every fold; 21 of 32 answered held out, 19 reading every one after the last question;
# `benchmarks/results/follow_up_queries-20261204-113720.json.xz`).
MAX_TERMS_READ_AFTER = 2


@dataclass(frozen=True)
class Standalone:
    """A follow-up as it is answered: `question`, which its sources are read for and its answer
    checked against, and `query`, which finds them."""

    question: str
    query: str

    @classmethod
    def as_written(cls, question: str) -> Standalone:
        return cls(question, question)


class HistoryError(FootnoteError):
    """A conversation history that is not a JSON list of {role, content} messages."""


def parse_history(text: str, origin: str = "history") -> list[Message]:
    """Messages from JSON text: a list of {"role": "user"|"assistant", "content": str}."""
    fix = 'write a JSON list such as [{"role": "user", "content": "..."}, {"role": "assistant", ...}]'
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HistoryError(
            f"{origin} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {fix}"
        ) from exc
    if not isinstance(raw, list):
        raise HistoryError(f"{origin} holds a JSON {type(raw).__name__}, not a list; {fix}")
    messages = []
    for position, item in enumerate(raw, start=1):
        if (
            not isinstance(item, dict)
            or item.get("role") not in _ROLES
            or not isinstance(item.get("content"), str)
        ):
            raise HistoryError(
                f"{origin} message {position} needs a role of user or assistant and a string content; {fix}"
            )
        messages.append(Message(role=item["role"], content=item["content"]))
    return messages


def read_history(path: Path) -> list[Message]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HistoryError(f"cannot read history file {path} ({exc.strerror}); check the path") from exc
    return parse_history(text, f"history file {path}")


def recent_turns(history: Sequence[Message], max_turns: int = HISTORY_TURNS) -> list[Message]:
    """The last `max_turns` user turns with their replies, each message cut to a bounded length."""
    if max_turns <= 0:
        return []
    starts = [i for i, message in enumerate(history) if message.role == "user"]
    kept = list(history[starts[-max_turns] :]) if len(starts) > max_turns else list(history)
    return [Message(m.role, _shorten(m.content)) for m in kept if m.role in _ROLES and m.content.strip()]


def leans_on_conversation(
    question: str, turns: Sequence[Message], top_document: Callable[[str], int | None]
) -> bool:
    """Whether a follow-up needs the conversation to be understood: it names too little to be
    searched alone, or searching it after the last question finds another document than
    searching it alone (`top_document`: the document a query finds first, None for none). A
    follow-up that names its subject finds the same document either way."""
    if len(content_terms(question)) < MIN_OWN_TERMS:
        return True
    alone = top_document(question)
    return alone is None or alone != top_document(after_last_question(question, turns))


def after_last_question(question: str, turns: Sequence[Message]) -> str:
    """The follow-up after the last question the user asked: a query that names what it is about."""
    last_user = next((m.content for m in reversed(turns) if m.role == "user"), "")
    return f"{_shorten(last_user, 200)} {question}".strip()


def keeps_follow_up(question: str, rewrite: str) -> bool:
    """Whether `rewrite` is one question that keeps every claim-bearing term of the follow-up
    `question` and adds at least one (what the conversation supplied). A rewrite that drifts
    loses the follow-up's words; a small model asked to rewrite sometimes answers instead."""
    if not rewrite.rstrip().endswith(("?", "\uff1f")) or len(rewrite) > 4 * len(question) + 200:
        return False
    own, rewritten = set(content_terms(question)), set(content_terms(rewrite))
    return own <= rewritten and bool(rewritten - own)


def condense_question(
    generator: Generator,
    history: Sequence[Message],
    question: str,
    params: GenerationParams,
    max_turns: int = HISTORY_TURNS,
    rewrite: bool = True,
) -> Standalone:
    """A standalone form of `question` given the recent turns (`question` itself without any):
    the model's rewrite; or, when the rewrite is not a question that keeps the follow-up's words
    and adds some (or the model is not asked: `rewrite` false), the follow-up searched after the
    last question, and read that way too unless it has words enough of its own
    (`MAX_TERMS_READ_AFTER`)."""
    turns = recent_turns(history, max_turns)
    if not turns:
        return Standalone.as_written(question)
    if rewrite:
        rewritten = _rewritten(generator, turns, question, params)
        if rewritten is not None:
            return rewritten
    after = after_last_question(question, turns)
    if len(content_terms(question)) <= MAX_TERMS_READ_AFTER:
        return Standalone.as_written(after)
    return Standalone(question, after)


def _rewritten(
    generator: Generator, turns: Sequence[Message], question: str, params: GenerationParams
) -> Standalone | None:
    """The model's rewrite of the follow-up `question`, when it keeps the follow-up's words."""
    conversation = "\n".join(f"{m.role}: {m.content}" for m in turns)
    messages = [
        Message("system", CONDENSE_PROMPT),
        Message("user", f"Conversation:\n{conversation}\n\nLast question: {question}"),
    ]
    # A rewrite is one question: a reply whose first sentence ends in a full stop is an answer,
    # and is cut there rather than generated to the end only to be set aside.
    condensed_params = GenerationParams(
        max_tokens=64,
        temperature=0.0,
        seed=params.seed,
        stop=("\n", ". "),
        repeat_penalty=params.repeat_penalty,
    )
    reply = "".join(generator.stream(messages, condensed_params)).strip().strip('"')
    return Standalone(reply, reply) if keeps_follow_up(question, reply) else None


def _shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def standalone_question(
    engine: AnswerEngine,
    question: str,
    history: Sequence[Message],
    usage: TokenUsage,
    search: Callable[[str], list[SearchHit]] | None = None,
) -> Standalone:
    """`question` rewritten by the engine's model to stand alone after `history` (counted under
    "condense") when it leans on the conversation; as written when it does not. `search` finds a
    query's sources (the engine's own by default); a caller that searches again may hand in one
    that keeps what it found."""
    policy = engine.policy
    turns = recent_turns(history, policy.history_turns)
    find = search or (lambda query: engine.retriever.search(query, policy.retrieval))

    def top_document(query: str) -> int | None:
        hits = find(query)
        return hits[0].document_id if hits else None

    if not turns or not leans_on_conversation(question, turns, top_document):
        return Standalone.as_written(question)
    generator = MeteredGenerator(engine.generator, usage, CONDENSE_STEP)
    rewrite = rewrites_follow_ups(engine.generator.name)
    return condense_question(
        generator, history, question, policy.generation, policy.history_turns, rewrite=rewrite
    )
