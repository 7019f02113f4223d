"""The sentences of the retrieved chunks as the answer reads them: each sentence's span, its terms,
its paragraph and its block (`sentence_spans`), and how much of a question's terms a sentence
covers with the lead-in before it in its paragraph lending its terms at a discount
(`covered_weight`: a manual names an option once and states its default sentences later).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from footnote.answer.terms import content_terms
from footnote.core.hits import SearchHit
from footnote.core.sentences import split_sentences
from footnote.models.base import Vector

# How much a term only the lead-in holds counts, per sentence back, and how many sentences back
# count; chosen with the evidence weights by a grid search on docqa-dev (`footnote.answer.evidence`).
CONTEXT_DISCOUNT = 0.7
CONTEXT_SENTENCES = 3


@dataclass(frozen=True)
class SentenceSpan:
    """One sentence of one retrieved chunk, with what scoring needs to know of it."""

    source: int  # 0-based index into the hits
    position: int  # index of the sentence in its chunk
    start: int  # character span in the chunk text
    end: int
    terms: frozenset[str]
    vector: Vector | None = None
    paragraph: int = 0  # index of its paragraph in the chunk (blank lines separate paragraphs)
    block: int = 0  # index of its block: a paragraph with those indented deeper below it


def _has_blank_line(gap: str) -> bool:
    """Whether `gap` holds a line of nothing but spaces and tabs between two line breaks."""
    return any(not line.strip(" \t") for line in gap.split("\n")[1:-1])


def _indent(text: str, start: int, known: bool = True) -> int | None:
    """The spaces before `start` on its line; None where they are not known (a chunk that may
    begin inside a line) or the line holds other text before it."""
    line = text.rfind("\n", 0, start) + 1
    before = text[line:start]
    if not known or before.strip(" \t"):
        return None
    return len(before.expandtabs())


def sentence_spans(hits: Sequence[SearchHit]) -> list[SentenceSpan]:
    """Every sentence of every hit with its terms, paragraph and block, in order. A paragraph
    indented deeper than the one that began its block belongs to that block: a manual's option
    line and the description set in below it, an item and what is nested under it."""
    spans: list[SentenceSpan] = []
    for source, hit in enumerate(hits):
        paragraph, block, last_end, block_indent = 0, 0, 0, None
        for position, (start, end) in enumerate(split_sentences(hit.text)):
            if not position:
                block_indent = _indent(hit.text, start, hit.text[:1].isspace())
            elif _has_blank_line(hit.text[last_end:start]):
                paragraph += 1
                indent = _indent(hit.text, start)
                if block_indent is None or indent is None or indent <= block_indent:
                    block += 1
                    block_indent = indent
            terms = frozenset(content_terms(hit.text[start:end]))
            spans.append(SentenceSpan(source, position, start, end, terms, paragraph=paragraph, block=block))
            last_end = end
    return spans


def covered_weight(
    weights: dict[str, float], sentence: SentenceSpan, context: list[tuple[frozenset[str], float]]
) -> float:
    """The weight of the terms `sentence` holds, and of those only its context holds, discounted."""
    covered = 0.0
    for term, weight in weights.items():
        if term in sentence.terms:
            covered += weight
        else:
            covered += weight * max((discount for terms, discount in context if term in terms), default=0.0)
    return covered


def lead_in(
    sentence: SentenceSpan, by_position: dict[tuple[int, int], SentenceSpan]
) -> list[tuple[frozenset[str], float]]:
    """The terms of the sentences before `sentence` in its paragraph, each with its discount:
    an option's description names the option once, and its default comes sentences later."""
    context = []
    weight = CONTEXT_DISCOUNT
    back = 1
    while True:
        before = by_position.get((sentence.source, sentence.position - back))
        if before is None or before.paragraph != sentence.paragraph:
            break
        if back <= CONTEXT_SENTENCES:
            context.append((before.terms, weight))
            weight *= CONTEXT_DISCOUNT
        lead = before
        back += 1
    if back > CONTEXT_SENTENCES + 1:
        # The paragraph's first line leads every later one: a table's header, an option's name.
        context.append((lead.terms, CONTEXT_DISCOUNT**2))
    return context
