"""Counting what the model read and wrote for one answer, step by step.

One answer can call the model several times: to condense a follow-up into a standalone
question, to write the answer, to suggest related questions. Each call is counted with the
model's own tokenizer and kept under its step, so a client is told the real prompt and
completion sizes, and which part of the work they belong to.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from footnote.core.loops import cut_loops
from footnote.models.base import GenerationParams, Generator, Message

ANSWER_STEP = "answer"
CONDENSE_STEP = "condense"
RELATED_STEP = "related"
CARRY_STEP = "carry"  # the question put into the documents' language
RETELL_STEP = "retell"  # a carried answer retold in the question's language


@dataclass(frozen=True)
class StepTokens:
    prompt: int = 0
    completion: int = 0
    calls: int = 0


@dataclass
class TokenUsage:
    """Tokens per step of one answer; `prompt_tokens` and `completion_tokens` sum every step."""

    steps: dict[str, StepTokens] = field(default_factory=dict)

    def add(self, step: str, prompt: int, completion: int) -> None:
        before = self.steps.get(step, StepTokens())
        self.steps[step] = StepTokens(
            before.prompt + prompt, before.completion + completion, before.calls + 1
        )

    def step(self, step: str) -> StepTokens:
        return self.steps.get(step, StepTokens())

    @property
    def prompt_tokens(self) -> int:
        return sum(tokens.prompt for tokens in self.steps.values())

    @property
    def completion_tokens(self) -> int:
        return sum(tokens.completion for tokens in self.steps.values())

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {
            name: {"prompt_tokens": t.prompt, "completion_tokens": t.completion, "calls": t.calls}
            for name, t in self.steps.items()
        }


class MeteredGenerator(Generator):
    """A generator that counts every call it passes on under one step of a `TokenUsage`, and
    ends a reply the moment its text falls into a loop (`footnote.core.loops.cut_loops`): every
    model call of an answer (condense, answer, related questions) goes through one.

    A reply cut short (the consumer stopped reading, or a loop) is counted as far as it was read.
    """

    def __init__(self, inner: Generator, usage: TokenUsage, step: str) -> None:
        self.inner = inner
        self.usage = usage
        self.step = step
        self.name = inner.name
        self.context_length = inner.context_length
        self.thread_safe = inner.thread_safe

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        pieces: list[str] = []
        stream = cut_loops(self.inner.stream(messages, params))
        try:
            for piece in stream:
                pieces.append(piece)
                yield piece
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
            completion = self.inner.count_tokens("".join(pieces)) if pieces else 0
            self.usage.add(self.step, self.inner.count_message_tokens(messages), completion)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        return self.inner.count_message_tokens(messages)
