"""Points: the passages that together answer a question needing several (a summary, a procedure,
a list, a comparison), each shown as a checked quote in the order its document gives it.

A chunk is weighed by the sentence reader's belief over all its sentences (the log of the summed
exponentials of their logits, so that a chunk with several answering sentences outweighs one with
a single lucky sentence). The best chunk is the section the answer comes first from; the others
within `SECTION_MARGIN` of it join (`MOST_SECTIONS` at most): the other side of a comparison, the
rest of a list that the chunking cut in two, the other sections of a document to summarise. The
sections take turns giving their best sentences while the answer fits in `POINT_WORDS`; the
points are shown document by document, the best-weighed first, each in its document's order,
consecutive sentences joined into one quote.

The answer takes `POINT_WORDS` words, or more where the reader rates many sentences near its
best (`points_words`). Measured by `benchmarks/broad_answers.py` beside the single-fact answer
(docs/benchmarks.md, "Broad questions"). Choosing chunks by a learned scorer over the retrieval
and reader signals, taking the reader's best sentences across all chunks, and retrieving more
chunks for broad questions were tried on broad-dev and did no better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from footnote.answer.evidence import Passage
from footnote.answer.policy import POINT_WORDS, PointWords
from footnote.answer.sentence_spans import SentenceSpan
from footnote.answer.terms import says_again
from footnote.core.cjk import count_words
from footnote.core.hits import SearchHit

# In the reader's logits: how far below the best chunk's weight another chunk may be and join,
# and how many chunks join at most.
SECTION_MARGIN = 3.0
MOST_SECTIONS = 4

_ANNOUNCING = (":", "：")  # a sentence ending so announces the one after it


@dataclass(frozen=True)
class ScoredSentences:
    """The retrieved chunks' sentences as the evidence step read them: each sentence's span, its
    text and its score (the reader's logit where it read them, `read`, else the blend's score)."""

    spans: Sequence[SentenceSpan]
    texts: Sequence[str]
    scores: Sequence[float]
    read: bool = False


def points_words(scored: ScoredSentences, words: PointWords) -> int:
    """The words a broad answer's points may take: `words.usual`, or, where the reader rates more
    sentences within `words.margin` logits of its best, as many words as those sentences hold,
    `words.most` at most. A question whose answer is one crisp passage keeps a short answer; one
    that the reader finds spread over many near-equal sentences (a list cut across chunks, both
    sides of a comparison) gets room for them. The blend's scores are on another scale and keep
    the usual words."""
    if not scored.read or words.margin <= 0 or not scored.scores:
        return words.usual
    best = max(scored.scores)
    pairs = zip(scored.texts, scored.scores, strict=True)
    near = sum(count_words(text) for text, score in pairs if score >= best - words.margin)
    return max(words.usual, min(words.most, near))


def chunk_weights(scored: ScoredSentences) -> dict[int, float]:
    """Each source's weight: the log of the summed exponentials of its sentences' scores."""
    best = max(scored.scores, default=0.0)
    sums: dict[int, float] = {}
    for span, score in zip(scored.spans, scored.scores, strict=True):
        sums[span.source] = sums.get(span.source, 0.0) + math.exp(score - best)
    return {source: best + math.log(total) for source, total in sums.items()}


def chosen_sections(
    scored: ScoredSentences, margin: float = SECTION_MARGIN, most: int = MOST_SECTIONS
) -> list[int]:
    """The best-weighed sources, best first: every one within `margin` of the best, `most` at most."""
    return _ranked(chunk_weights(scored), margin, most)[0]


def _ranked(weights: dict[int, float], margin: float, most: int) -> tuple[list[int], list[int]]:
    """The sources by weight, best first, split into the chosen sections and the rest."""
    ranked = sorted(weights, key=lambda source: (-weights[source], source))
    chosen = [source for source in ranked if weights[source] >= weights[ranked[0]] - margin][:most]
    return chosen, [source for source in ranked if source not in chosen]


def select_points(
    hits: Sequence[SearchHit], scored: ScoredSentences, budget_words: int = POINT_WORDS
) -> list[Passage]:
    """The points of the chosen sections, in their documents' order (the best-weighed document
    first): the sections take turns, each adding its best sentence not yet taken while the
    answer fits in `budget_words`, and runs of consecutive sentences are joined into one quote.
    Once the chosen sections have nothing more that fits, the other chunks fill the answer,
    best-weighed first: a summary whose best chunk outweighs the rest still says more than that
    chunk. Left out: sentences without a word (a code fence, a rule), a section's heading or its
    document's title standing alone (they name a point, not make it), and a sentence that says
    nothing a point taken before does not (chunks overlap, and a manual repeats itself). A
    sentence that announces what follows it (ending with a colon) is taken with the sentence after
    it: "To read a PNG file using the simplified API:" says nothing alone."""
    sections, rest = _ranked(chunk_weights(scored), SECTION_MARGIN, MOST_SECTIONS)
    following = {(span.source, span.position): i for i, span in enumerate(scored.spans)}
    taken: list[int] = []
    seen: list[str] = []
    used = 0

    def fits(index: int) -> bool:
        nonlocal used
        words, text = count_words(scored.texts[index]), scored.texts[index]
        if index in taken or used + words > budget_words or any(says_again(text, said) for said in seen):
            return False
        taken.append(index)
        seen.append(text)
        used += words
        return True

    def take(queue: list[int]) -> bool:
        while queue:
            index = queue.pop(0)
            if fits(index):
                # A sentence that announces what follows ("To read a file:") comes with it.
                span = scored.spans[index]
                after = following.get((span.source, span.position + 1))
                if after is not None and count_words(scored.texts[after]) and _announces(scored.texts[index]):
                    fits(after)
                return True
        return False

    queues = [_candidates(hits[source], source, scored) for source in sections]
    while any(queues):
        for queue in queues:
            take(queue)
    for source in rest:
        queue = _candidates(hits[source], source, scored)
        while take(queue):
            pass
    # Documents in the order they weigh (the best first: a single fact taken for a broad question
    # still leads with its answer), each one's points in its own order.
    weighed: dict[int, int] = {}  # each document's rank, by its best-weighed chunk
    for source in [*sections, *rest]:
        weighed.setdefault(hits[source].document_id, len(weighed))
    shown = sorted(
        {scored.spans[i].source for i in taken}, key=lambda s: (weighed[hits[s].document_id], hits[s].start)
    )
    order = {source: rank for rank, source in enumerate(shown)}
    taken.sort(key=lambda i: (order[scored.spans[i].source], scored.spans[i].position))
    return _runs(scored, taken)


def _announces(text: str) -> bool:
    """Whether `text` ends announcing what follows it: "To read a file:"."""
    return text.rstrip().endswith(_ANNOUNCING)


def _candidates(hit: SearchHit, source: int, scored: ScoredSentences) -> list[int]:
    """The sentences of chunk `source` that can be points, best first: not wordless, not the
    chunk's heading or title alone."""
    labels = _labels(hit)
    indexes = [
        i
        for i, span in enumerate(scored.spans)
        if span.source == source and count_words(scored.texts[i]) and _bare(scored.texts[i]) not in labels
    ]
    return sorted(indexes, key=lambda i: -scored.scores[i])


def is_label(hit: SearchHit, text: str) -> bool:
    """Whether `text` is the chunk `hit`'s heading or its document's title standing alone: it
    names what the section is about, and answers nothing."""
    return _bare(text) in _labels(hit)


def _bare(text: str) -> str:
    """`text` as a heading compares: without Markdown's heading marks, spacing and case."""
    return " ".join(text.strip().lstrip("#").split()).casefold()


def _labels(hit: SearchHit) -> set[str]:
    """The title and headings of the chunk `hit`, bare."""
    return {_bare(label) for label in (hit.title, *hit.heading_path) if label.strip()}


def _runs(scored: ScoredSentences, taken: Sequence[int]) -> list[Passage]:
    """The taken sentences joined into passages where they follow one another in one chunk."""
    passages: list[Passage] = []
    run: list[int] = []
    for index in [*taken, -1]:
        span = scored.spans[index] if index >= 0 else None
        if run and (
            span is None
            or span.source != scored.spans[run[-1]].source
            or span.position != scored.spans[run[-1]].position + 1
        ):
            first, last = scored.spans[run[0]], scored.spans[run[-1]]
            best = max(run, key=lambda i: scored.scores[i])
            passages.append(
                Passage(first.source, first.start, last.end, scored.spans[best], scored.scores[best])
            )
            run = []
        if span is not None:
            run.append(index)
    return passages
