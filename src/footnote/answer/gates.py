"""The gates an answer passes: each either finishes the answer where it stands or lets it go on.

In the order they are met: no sources at all; a question naming a word no document holds;
sources that do not match the question (the relevance and evidence floors), all three before
anything is generated; then, once written, an answer whose citations match the question too
little is withheld. A gate returns the finished `Answer`, or None when the answer goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from footnote.answer.evidence import Answerable, Passage
from footnote.answer.policy import AnswerPolicy
from footnote.answer.result import Answer, Asked
from footnote.answer.streaming import Clock
from footnote.answer.terms import named_words
from footnote.core.hits import SearchHit


def without_sources(asked: Asked) -> Answer | None:
    """Nothing was retrieved: the no-answer sentence."""
    return None if asked.sources else asked.declined()


def naming_unknown_words(asked: Asked, unknown: Sequence[str], clock: Clock) -> Answer | None:
    """The question is about something the documents never mention (`unknown`): the nearest
    sources are shown, and nothing is scored or generated."""
    if not unknown:
        return None
    declined = asked.declined(unrelated=True, unknown_words=list(unknown))
    clock.mark("total")
    return declined


def unrelated_sources(
    asked: Asked,
    policy: AnswerPolicy,
    match: Callable[[], float],
    passages: Sequence[Passage],
    answerable: Answerable,
    clock: Clock,
) -> Answer | None:
    """Nothing retrieved answers the question (for the readers that select evidence, no passage
    holds an answer-shaped sentence covering the question enough, weighed by the sentence reader's
    belief when it read them; otherwise, or with no reader, its best span matches it less than the
    relevance floor): say so, show the nearest sources, and spend no time generating an answer
    they could not support. Where the reader decides, the relevance floor does not: on docqa-dev
    it declined 6 answerable questions for 1 unanswerable one the reader let through. Where the
    multilingual embedder read the sources in the reader's place (a question in a language the
    reader does not read), its best similarity alone decides: the question's words cannot meet
    the sources' in another language. `match` gives the best span's match with the question (it
    embeds the sources' sentences, so it is asked only where it decides or is recorded)."""
    across = answerable.similarity is not None and policy.reads_evidence
    reader_decides = answerable.read is not None and policy.reads_evidence
    floor = policy.reader_floor if reader_decides else policy.evidence_floor
    if across:
        across_floor = (
            policy.foreign_sources_floor if answerable.question_read else policy.across_language_floor
        )
        unanswered = not passages or (answerable.similarity or 0.0) < across_floor
        unmatched = False
    else:
        unanswered = policy.reads_evidence and (not passages or answerable.value < floor)
        unmatched = not reader_decides and match() < policy.relevance_floor
    if not unmatched and not unanswered:
        return None
    declined = asked.declined(
        match=match(),
        unrelated=True,
        evidence_score=passages[0].score if passages else 0.0,
        answerability=answerable.value,
    )
    clock.mark("total")
    return declined


def unmatched_citations(answer: Answer, policy: AnswerPolicy, no_answer: str) -> Answer | None:
    """The abstention gate: an answer whose cited spans match the question less than
    `abstain_below` is withheld (its sentences kept apart, for inspection)."""
    if not answer.citations or answer.relevance >= policy.abstain_below:
        return None
    return replace(answer, withheld=True, text=no_answer)


def unknown_words(
    question: str, sources: Sequence[SearchHit], indexed: Callable[[list[str]], list[str]], english: bool
) -> list[str]:
    """The words naming something in `question` that neither the given sources nor the indexed
    documents hold (`indexed` returns those of its words no document holds). Capitalised words
    count as names in English questions only (German capitalises every noun)."""
    words = named_words(question, names=english)
    if not words:
        return []
    shown = " ".join(f"{hit.title} {' '.join(hit.heading_path)} {hit.text}" for hit in sources).lower()
    missing = [word for word in words if word.lower() not in shown]
    return indexed(missing) if missing else []
