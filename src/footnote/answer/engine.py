"""Answering: retrieve, prompt, stream, and check every sentence against the sources.

An `AnswerEngine` is built once from its parts and an `AnswerPolicy` and never changed: code
that needs another policy builds another engine (`dataclasses.replace(engine, policy=...)`).
Each question is answered by the engine as it reads the question's language
(`for_language`, in `footnote.answer.answering`), through the gates (`footnote.answer.gates`)
and the checked stream (`footnote.answer.streaming`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from footnote import tracing
from footnote.answer.answering import Answering, Conversation, check_question
from footnote.answer.citations import SupportModels
from footnote.answer.history import Standalone
from footnote.answer.policy import (
    EXTRACT_READER,
    AnswerPolicy,
)
from footnote.answer.prompt import carried_notice, no_reader_notice
from footnote.answer.result import (
    Answer,
    AnswerEvent,
    DoneEvent,
    SourcesEvent,
)
from footnote.answer.retell import Retelling, retells
from footnote.answer.shape import QuestionShape
from footnote.answer.streaming import Clock, final, held_back
from footnote.answer.usage import TokenUsage
from footnote.core.foreground import FOREGROUND
from footnote.core.hits import SearchHit
from footnote.core.language import ENGLISH, UNKNOWN, detect_language
from footnote.models.base import Generator, Message
from footnote.retrieval.retriever import HybridRetriever


class LanguageModels(Protocol):
    """Which models read which languages."""

    def reads(self, language: str) -> bool:
        """Does the answer model read `language`?"""

    def generator_for(self, language: str) -> Generator | None:
        """Another model that reads `language`, or None when none is installed."""


@dataclass(frozen=True)
class AnswerEngine:
    """Answers questions from what `retriever` finds, written by `generator` and checked by
    `support`, as `policy` says; `languages` picks another model for a language the generator
    does not read (None: the generator answers every question)."""

    retriever: HybridRetriever
    generator: Generator
    support: SupportModels
    policy: AnswerPolicy = field(default_factory=AnswerPolicy)
    languages: LanguageModels | None = None
    shape: QuestionShape | None = None  # tells questions that need several passages (None: none do)

    def source_budget(self) -> int:
        """Tokens left for sources once the answer and the prompt's own text are reserved."""
        return self.generator.context_length - self.policy.generation.max_tokens - 256

    def stream(
        self,
        question: str,
        history: Sequence[Message] | None = None,
        instruction: str = "",
        standalone: Standalone | None = None,
        usage: TokenUsage | None = None,
    ) -> Iterator[AnswerEvent]:
        """Retrieve sources for `question` and answer from them, streaming events.

        With `history`, a question that leans on it is first condensed into a standalone one
        (unless the caller already did: `standalone`): its sources are found by the standalone
        query and read for the standalone question; the recent turns go into the prompt. One
        that does not is answered as written, as if asked alone.
        `instruction` is a client's own system message, kept below footnote's rules. `usage`
        collects the tokens of every model call. While it runs, background work in this process
        (a server's ingest) waits at its next step (`FOREGROUND`).
        """
        with FOREGROUND.answering():
            yield from self._stream(question, history, instruction, standalone, usage)

    def _stream(
        self,
        question: str,
        history: Sequence[Message] | None,
        instruction: str,
        standalone: Standalone | None,
        usage: TokenUsage | None,
    ) -> Iterator[AnswerEvent]:
        question = check_question(question)
        answering = self.for_language(detect_language(question))
        usage = usage if usage is not None else TokenUsage()
        clock = Clock(time.perf_counter())
        # Deciding whether a follow-up leans on the conversation searches the queries this
        # answer may then be found by: each is searched once.
        found: dict[str, list[SearchHit]] = {}

        retrieval = answering.retrieval()

        def search(query: str) -> list[SearchHit]:
            if query not in found:
                found[query] = self.retriever.search(query, retrieval)
            return found[query]

        if standalone is None:
            standalone = Standalone.as_written(question)
            if history:
                standalone = answering.condense(question, history, usage, search)
                clock.mark("condense")
        with tracing.span("retrieve", mode=retrieval.mode, limit=retrieval.limit):
            hits = answering.kept(search(standalone.query))
        clock.mark("retrieval")
        # A follow-up that does not lean on the conversation is answered as if asked alone: the
        # turns would only lengthen the prompt and move the model's words.
        leans = standalone.query != question
        conversation = Conversation(history if leans else None, instruction, usage)
        events = answering.events(standalone.question, hits, clock, conversation, standalone.query)
        carried = answering.carried(standalone.question, hits, usage)
        if carried is not None:
            # Answered as the English question it was put into, after a notice naming it; where
            # that declines before writing, read as it was asked (the multilingual reading).
            english = self.carrying(answering.language, carried, standalone.question)
            retrieval = english.retrieval()
            with tracing.span("retrieve", mode=retrieval.mode, limit=retrieval.limit):
                english_hits = english.kept(self.retriever.search(carried, retrieval))
            clock.mark("carry")
            carried_events = english.events(carried, english_hits, clock, conversation, carried)
            events = unless_declined(carried_events, events)
        yield from held_back(events, self.policy.abstain_below)

    def stream_sources(
        self,
        question: str,
        hits: Sequence[SearchHit],
        history: Sequence[Message] | None = None,
        instruction: str = "",
    ) -> Iterator[AnswerEvent]:
        """Answer from `hits` given by the caller (no retrieval), streaming events."""
        question = check_question(question)
        conversation = Conversation(history, instruction, TokenUsage())
        answering = self.for_language(detect_language(question))
        events = answering.events(question, list(hits), Clock(time.perf_counter()), conversation)
        with FOREGROUND.answering():
            yield from held_back(events, self.policy.abstain_below)

    def for_language(self, language: str) -> Answering:
        """This engine as it answers a question in `language`: with the model that reads it, in
        that language's wording; when no installed model reads it, with the checked quote alone,
        after a notice that says so."""
        wording = language if language != UNKNOWN else ENGLISH
        if self.languages is None or self.languages.reads(language):
            return Answering(self, wording)
        generator = self.languages.generator_for(language)
        if generator is None:
            quoting = replace(self, policy=replace(self.policy, reader=EXTRACT_READER))
            return Answering(quoting, wording, no_reader_notice(language))
        return Answering(replace(self, generator=generator), wording)

    def carrying(self, language: str, carried: str, question: str) -> Answering:
        """This engine as it answers the English question `carried`, put there from `language`
        (`question` as asked): as any English question, after a notice in `language` that names
        it, and retold in `language` after its quotes where the policy asks for it and the models
        are there."""
        english = replace(self.for_language(ENGLISH), notice=carried_notice(language, carried))
        generator = self.languages.generator_for(language) if self.languages is not None else None
        if not self.policy.retell_answers or not retells(language) or generator is None:
            return english
        return replace(english, retelling=Retelling(question, language, generator))

    def ask_sources(self, question: str, hits: Sequence[SearchHit]) -> Answer:
        return final(self.stream_sources(question, hits))

    def ask(self, question: str, history: Sequence[Message] | None = None) -> Answer:
        return final(self.stream(question, history))


def unless_declined(events: Iterator[AnswerEvent], instead: Iterator[AnswerEvent]) -> Iterator[AnswerEvent]:
    """`events`, unless their answer declines before saying anything (its sources are followed
    at once by its end): then `instead`."""
    first = next(events, None)
    second = next(events, None) if isinstance(first, SourcesEvent) else None
    if isinstance(second, DoneEvent) and second.answer.abstained:
        yield from instead
        return
    yield from (event for event in (first, second) if event is not None)
    yield from events
