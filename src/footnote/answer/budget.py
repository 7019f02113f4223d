"""Context budgeting: sources packed by rank in real tokens, a long one trimmed around its best match.

Hits are taken in rank order while their whole blocks fit. The first hit that does not fit is
not dropped when enough room is left: it is cut to the run of its sentences around the one
that matches the question best, so the part that answers survives and the rest is left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from footnote.answer.prompt import format_source, select_sources
from footnote.answer.terms import content_terms, lexical_support
from footnote.core.hits import SearchHit
from footnote.core.sentences import split_sentences

# Below this many tokens a trimmed source holds too little to be worth the model's attention.
MIN_TRIMMED_TOKENS = 48

CountTokens = Callable[[str], int]


def pack_sources(
    hits: Sequence[SearchHit], question: str, count_tokens: CountTokens, budget_tokens: int
) -> list[SearchHit]:
    """The hits that fit in `budget_tokens`, in rank order, the first misfit trimmed around its match."""
    packed: list[SearchHit] = []
    used = 0
    for hit in hits:
        cost = count_tokens(format_source(len(packed) + 1, hit))
        if used + cost <= budget_tokens:
            packed.append(hit)
            used += cost
            continue
        room = budget_tokens - used
        if room >= MIN_TRIMMED_TOKENS or not packed:
            trimmed = trim_around_match(hit, question, count_tokens, room, len(packed) + 1)
            if trimmed is not None:
                packed.append(trimmed)
        break
    return packed


def trim_around_match(
    hit: SearchHit, question: str, count_tokens: CountTokens, budget_tokens: int, number: int = 1
) -> SearchHit | None:
    """`hit` cut to whole sentences around its best match for `question` that fit `budget_tokens`.

    The span stays consistent: `end - start == len(text)` and the text is a slice of the original.
    When even the best sentence is too long, its leading part that fits is kept.
    """
    spans = split_sentences(hit.text)
    if not spans:
        return None
    claim = content_terms(question)
    scores = [lexical_support(claim, frozenset(content_terms(hit.text[s:e]))) for s, e in spans]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))

    def cut(first: int, last: int) -> SearchHit:
        start, end = spans[first][0], spans[last][1]
        return dataclasses.replace(
            hit, text=hit.text[start:end], start=hit.start + start, end=hit.start + end
        )

    def fits(candidate: SearchHit) -> bool:
        return count_tokens(format_source(number, candidate)) <= budget_tokens

    first = last = best
    if not fits(cut(first, last)):
        selected = select_sources([cut(first, last)], count_tokens, budget_tokens)
        return selected[0] if selected and selected[0].text else None
    grew = True
    while grew:
        grew = False
        # Prefer the sentence after the match (it often finishes the thought), then the one before.
        for next_first, next_last in ((first, last + 1), (first - 1, last)):
            if next_first >= 0 and next_last < len(spans) and fits(cut(next_first, next_last)):
                first, last, grew = next_first, next_last, True
                break
    return cut(first, last)
