"""Conversation history: reading it, keeping the last few turns, and condensing a follow-up.

A follow-up such as "and in 2019?" retrieves nothing on its own, so the model first rewrites
it into a standalone question from the recent turns; retrieval and checking use that question.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from footnote.errors import FootnoteError
from footnote.models.base import GenerationParams, Generator, Message

# Turns kept for the prompt: a turn is one user message and the reply to it; oldest go first.
MAX_TURNS = 3
# Characters of each kept message shown to the model; answers are short, sources are not repeated.
MAX_MESSAGE_CHARS = 600
CONDENSE_PROMPT = (
    "Rewrite the last question so it can be understood without the conversation. "
    "Keep names, dates and numbers. Reply with the question only."
)
_ROLES = ("user", "assistant")


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


def recent_turns(history: Sequence[Message], max_turns: int = MAX_TURNS) -> list[Message]:
    """The last `max_turns` user turns with their replies, each message cut to a bounded length."""
    if max_turns <= 0:
        return []
    starts = [i for i, message in enumerate(history) if message.role == "user"]
    kept = list(history[starts[-max_turns] :]) if len(starts) > max_turns else list(history)
    return [Message(m.role, _shorten(m.content)) for m in kept if m.role in _ROLES and m.content.strip()]


def condense_question(
    generator: Generator,
    history: Sequence[Message],
    question: str,
    params: GenerationParams,
    max_turns: int = MAX_TURNS,
) -> str:
    """A standalone form of `question` given the recent turns; `question` itself without history."""
    turns = recent_turns(history, max_turns)
    if not turns:
        return question
    conversation = "\n".join(f"{m.role}: {m.content}" for m in turns)
    messages = [
        Message("system", CONDENSE_PROMPT),
        Message("user", f"Conversation:\n{conversation}\n\nLast question: {question}"),
    ]
    condensed_params = GenerationParams(max_tokens=64, temperature=0.0, seed=params.seed, stop=("\n",))
    reply = "".join(generator.stream(messages, condensed_params)).strip().strip('"')
    # A rewrite that is empty or rambles is worse than the follow-up with the last question added.
    if not reply or len(reply) > 4 * len(question) + 200:
        last_user = next((m.content for m in reversed(turns) if m.role == "user"), "")
        return f"{_shorten(last_user, 200)} {question}".strip()
    return reply


def _shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"
