"""Related questions: follow-ups the reader could ask next, grounded in the sources used.

After the answer, the model proposes questions about each source in turn (those the answer
cites first); each is kept only when
- it is one well-formed question (an interrogative or auxiliary opening, one question mark),
- every content word it uses occurs in the sources asked about, so the documents can be
  expected to answer it rather than the model's own knowledge,
- it asks about something the question did not mention (not a restatement),
- it is not a near-duplicate of a question already kept.
A small model that proposes nothing usable yields no related questions, never invented ones.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from footnote.answer.terms import content_terms
from footnote.core.cjk import has_cjk
from footnote.core.hits import SearchHit
from footnote.core.loops import is_degenerate
from footnote.core.sentences import MARKER
from footnote.models.base import GenerationParams, Generator, Message

MAX_RELATED = 5
# A reader is offered a few; a small model rarely gets more than one or two of its own through.
ENOUGH_RELATED = 3
# Each source is a model call of its own; the first few used are where the follow-ups are.
MAX_SOURCES_ASKED = 3
# Room for three short questions; a blank line ends the list early.
RELATED_TOKENS = 72
# Two questions whose content words overlap this much ask the same thing.
DUPLICATE_OVERLAP = 0.75
MIN_WORDS, MAX_WORDS = 3, 30

# One source at a time, and a numbered list already begun: measured on RGB passages, a 135M
# model asked for questions about several sources at once repeats one line until the limit.
RELATED_PROMPT = "Read the text. Write three different questions that the text answers, one per line."

_INTERROGATIVES = frozenset("what which who whom whose when where why how".split())
_AUXILIARIES = frozenset(
    "is are was were do does did can could will would should shall may might has have had".split()
)
_QUESTION = re.compile(r"[^?\uff1f\n]*[?\uff1f]")
# List numbers, bullets and labels a model puts before each question: "1.", "-", "Q2:".
_LEAD = re.compile(r"^\s*(?:(?:[-*+\u2022]|\d{1,2}[.)]|(?:q|question)\s*\d*\s*[:.)])\s*)+", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+")


def related_messages(source: SearchHit) -> list[Message]:
    user = f"Text: {source.text.strip()}\n\nQuestions:\n1."
    return [Message(role="system", content=RELATED_PROMPT), Message(role="user", content=user)]


def suggest_related(
    generator: Generator,
    question: str,
    sources: Sequence[SearchHit],
    params: GenerationParams,
    limit: int = MAX_RELATED,
) -> list[str]:
    """Up to `limit` follow-up questions the model proposed that pass every check against `sources`.

    The sources are asked in order (the caller puts the ones the answer cites first) until
    `ENOUGH_RELATED` questions are kept or `MAX_SOURCES_ASKED` have been asked.
    """
    if limit <= 0:
        return []
    # The caller's stop sequences belong to the answer; a blank line ends a list.
    settings = dataclasses.replace(params, max_tokens=RELATED_TOKENS, stop=("\n\n",))
    candidates: list[str] = []
    kept: list[str] = []
    for asked, source in enumerate(sources[:MAX_SOURCES_ASKED], start=1):
        candidates += candidate_questions(generator.generate(related_messages(source), settings))
        kept = filter_related(candidates, question, sources[:asked], limit)
        if len(kept) >= min(ENOUGH_RELATED, limit):
            break
    return kept


def candidate_questions(reply: str) -> list[str]:
    """Every question in the model's reply, list numbers, bullets and `[n]` markers removed."""
    found: list[str] = []
    for line in reply.splitlines():
        text = MARKER.sub("", _LEAD.sub("", line)).strip()
        found.extend(" ".join(match.group().split()) for match in _QUESTION.finditer(text))
    return [question for question in found if question]


def filter_related(
    candidates: Sequence[str], question: str, sources: Sequence[SearchHit], limit: int = MAX_RELATED
) -> list[str]:
    """The candidates that are well formed, grounded, new and distinct, first ones first."""
    source_terms = frozenset(term for hit in sources for term in content_terms(hit.text))
    asked = frozenset(content_terms(question))
    kept: list[str] = []
    kept_terms: list[frozenset[str]] = []
    for candidate in candidates:
        terms = frozenset(content_terms(candidate))
        well_formed = is_well_formed(candidate) and not is_degenerate(candidate)
        if not well_formed or not terms or not terms <= source_terms:
            continue
        if terms <= asked:
            continue  # nothing the reader did not already ask about
        if any(_overlap(terms, other) >= DUPLICATE_OVERLAP for other in kept_terms):
            continue
        kept.append(candidate)
        kept_terms.append(terms)
        if len(kept) == limit:
            break
    return kept


def is_well_formed(text: str) -> bool:
    """One question: ends with a question mark, opens like a question, of a readable length."""
    text = text.strip()
    if not text.endswith(("?", "\uff1f")) or text.count("?") + text.count("\uff1f") != 1:
        return False
    if has_cjk(text):
        return 4 <= len(text) <= 80
    words = [word.lower() for word in _WORD.findall(text)]
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not text[0].isupper():
        return False
    # "In which year ...", "For how long ...": the interrogative may follow a short preposition.
    return words[0] in _AUXILIARIES or any(word in _INTERROGATIVES for word in words[:3])


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b)
