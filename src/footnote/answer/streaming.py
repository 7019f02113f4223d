"""Streaming an answer: the model's reply checked sentence by sentence as it arrives.

Sentences are checked as soon as they are complete, so a client sees each one with its
verified footnotes while the rest of the answer is still generating. A waiting client gets
the last event of the same stream (`final`), so both see the same answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from footnote import tracing
from footnote.answer.citations import AnswerSentence, CitationChecker
from footnote.answer.result import Answer, AnswerEvent, DoneEvent, SentenceEvent, TokenEvent
from footnote.answer.terms import says_again
from footnote.core.loops import is_degenerate, lowered_words
from footnote.core.sentences import SentenceAssembler, strip_markers
from footnote.models.base import GenerationParams, Generator, Message

_LIST_NUMBER = re.compile(r"^\s*\d{1,3}[.)]\s+")


@dataclass(frozen=True)
class Clock:
    """When answering started, and the milliseconds since then at which each step ended."""

    started: float
    timings: dict[str, float] = field(default_factory=dict)

    def mark(self, step: str) -> None:
        self.timings[step] = (time.perf_counter() - self.started) * 1000


@dataclass
class Draft:
    """What the model has written so far: its pieces, and the sentences already said."""

    pieces: list[str] = field(default_factory=list)
    said: set[str] = field(default_factory=set)
    said_texts: list[str] = field(default_factory=list)

    def repeats(self, sentence: str) -> bool:
        """Whether `sentence` repeats one already said (markers, list numbers, case and
        punctuation aside), or says nothing one already said does not (or the reverse: a
        sentence is never shown beside one that says the same); otherwise it is counted as said."""
        text, _ = strip_markers(sentence)
        key = " ".join(lowered_words(_LIST_NUMBER.sub("", text)))
        if key in self.said or any(
            says_again(text, earlier) or says_again(earlier, text) for earlier in self.said_texts
        ):
            return True
        if key:
            self.said.add(key)
            self.said_texts.append(text)
        return False


def generate_checked(
    generator: Generator,
    messages: list[Message],
    params: GenerationParams,
    checker: CitationChecker,
    clock: Clock,
    draft: Draft,
    sentences: list[AnswerSentence],
    most: int = 0,
) -> Iterator[AnswerEvent]:
    """Stream the model's reply, checking each sentence (added to `sentences`) as soon as it is
    complete; a model caught in a loop is cut off at its first repeated or degenerate sentence,
    which is never shown. With `most` set, the model stops after that many sentences. Every
    checked sentence is yielded, flagged ones too: `with_quote` keeps them in the answer and
    leaves them out of what is shown."""
    assembler = SentenceAssembler()
    repeated = enough = False
    first = len(sentences)
    generating = time.time_ns()
    stream = generator.stream(messages, params)
    try:
        for piece in stream:
            if not draft.pieces:
                clock.mark("first_token")
            draft.pieces.append(piece)
            yield TokenEvent(piece)
            for text in assembler.feed(piece):
                if _degenerate(text) or draft.repeats(text):
                    repeated = True  # a model caught in a loop: what follows would repeat too
                    break
                sentences.append(checker.check(text))
                yield SentenceEvent(len(sentences) - 1, sentences[-1])
                enough = bool(most) and len(sentences) - first >= most
                if enough:
                    break
            if repeated or enough:
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    verifying = time.time_ns()
    tracing.record("generate", generating, verifying, model=generator.name, pieces=len(draft.pieces))
    for text in [] if repeated or enough else assembler.finish():
        if _degenerate(text) or draft.repeats(text):
            continue
        sentences.append(checker.check(text))
        yield SentenceEvent(len(sentences) - 1, sentences[-1])
    tracing.record("verify", verifying, time.time_ns(), sentences=len(sentences))


def _degenerate(text: str) -> bool:
    """`is_degenerate` of the sentence as it is shown: the model's markers are taken out first,
    so that "[1]" cannot hide a line of repeated words."""
    return is_degenerate(strip_markers(text)[0])


def with_quote(
    events: Iterator[AnswerEvent],
    quotes: list[AnswerSentence],
    sentences: list[AnswerSentence],
    corroborates: Callable[[AnswerSentence, AnswerSentence], bool],
) -> Iterator[AnswerEvent]:
    """The model's events, its sentences numbered on after `sentences` (to which they are added),
    with `quotes` held until the model's first sentence is checked. Each quote goes before that
    sentence unless the sentence is supported by other sources only and the quote does not hold
    its answer (`corroborates(quote, sentence)`): a passage the answer does not rest on would put
    a footnote beside the point. With no sentence from the model, the quotes are the answer.
    A claim no source supports (`flagged`) is added to `sentences`, for inspection, but never
    yielded: nothing unsupported is shown as the answer. An event's index is its sentence's
    place in `sentences`."""
    pending = list(quotes)
    for event in events:
        if not isinstance(event, SentenceEvent):
            yield event
            continue
        for quote in pending:
            if not _rests_elsewhere(event.sentence, quote) or corroborates(quote, event.sentence):
                sentences.append(quote)
                yield SentenceEvent(len(sentences) - 1, quote)
        pending = []
        sentences.append(event.sentence)
        if not event.sentence.flagged:
            yield SentenceEvent(len(sentences) - 1, event.sentence)
    for quote in pending:
        sentences.append(quote)
        yield SentenceEvent(len(sentences) - 1, quote)


def held_back(events: Iterator[AnswerEvent], abstain_below: float) -> Iterator[AnswerEvent]:
    """The answer's events; with the abstention gate on, sentences are held back until the
    gate has decided, so that no client is shown a claim the answer then withholds."""
    if abstain_below <= 0:
        yield from events
        return
    held: list[SentenceEvent] = []
    for event in events:
        if isinstance(event, SentenceEvent):
            held.append(event)
            continue
        if isinstance(event, DoneEvent) and not event.answer.withheld:
            yield from held
        yield event


def final(events: Iterator[AnswerEvent]) -> Answer:
    """The answer a stream ends with: what a client that does not stream is given."""
    for event in events:
        if isinstance(event, DoneEvent):
            return event.answer
    raise AssertionError("the answer stream ended without a DoneEvent")


def _rests_elsewhere(sentence: AnswerSentence, quote: AnswerSentence) -> bool:
    """Whether a supported `sentence` cites no document that `quote` cites."""
    quoted = {citation.document_id for citation in quote.citations}
    cited = {citation.document_id for citation in sentence.citations}
    return sentence.supported and bool(cited) and not cited & quoted
