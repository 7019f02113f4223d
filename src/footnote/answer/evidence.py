"""Evidence selection: the few source passages most likely to answer, before any generation.

A small model reading five whole chunks is slow (every prompt token is prefill time) and
easily distracted by them. So the sentences of the retrieved chunks are scored against the
question first, and the model is shown only the best few, each grown by the sentences just
before and after it within its paragraph, within a small token budget.

A sentence's score blends four signals measured on the question:
- keyword: the IDF-weighted share of the question's terms the sentence contains, IDF taken
  over the retrieved sentences themselves; terms only its lead-in holds count at a discount
  (the three sentences before it in its paragraph, and the paragraph's first line: a man
  page's option line, a table's header row);
- dense: the cosine between sentence and question embeddings;
- rank: the retrieval rank of its chunk;
- agreement: the share of the other sources that also hold one of its candidate answer values;
and then adjusts it for what an answer looks like: a sentence that holds a token of the kind
the question asks for (a number for "how many", an option or identifier for "which flag", a
name for "who") that the question does not already contain scores more; one that adds no term
beyond the question, or is itself a question (an FAQ's heading), scores less.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from footnote.answer.asks import agreement_of, asked_kinds, asked_tokens
from footnote.answer.policy import EVIDENCE_TOKENS
from footnote.answer.sentence_spans import SentenceSpan, covered_weight, lead_in
from footnote.answer.terms import content_terms
from footnote.core.hits import SearchHit
from footnote.core.vectors import closeness
from footnote.models.base import Vector
from footnote.models.sentence_reader import reader_input

# Weights of the signals and of the lead-in's terms, chosen by a grid search on docqa-dev; what
# they give is measured by `benchmarks/evidence_selection.py`, retired, its results under benchmarks/results/.
# Cross-validated by document (`benchmarks/evidence_model.py`), the same grid search gives
# passage@1 0.525 (0.575 in sample, 0.5625 for these weights), and learned listwise blends, of
# these signals or of nine more, do no better (0.525 and 0.5125): the weights stay hand-set.
KEYWORD_WEIGHT = 0.4
DENSE_WEIGHT = 0.2
RANK_WEIGHT = 0.2
TYPED_BONUS = 0.3
# RGB en_fact reading: citation precision 0.659 with it, 0.619 without; docqa-dev unchanged
# (benchmarks/results/answers_*-agreement-20261203.json.xz against *-default-rule-20261203.json.xz).
AGREEMENT_WEIGHT = 0.1
# Two discounts, of sentences that only restate the question's terms and of sentences that are
# questions, were taken out together: beside the reader they moved passage@1 0.60 -> 0.5875 on
# docqa-dev and not at all on squad2-dev (0.8673; benchmarks/evidence_ablation.py --together, retired).
# The sentence reader reads every sentence of the retrieved chunks and its probability joins their
# scores at READER_WEIGHT. Both docqa-dev and squad2-dev put the answer in the quoted passage more
# often at every weight from 0.1 to 3; 0.5 is the best weight in sample on docqa-dev and within
# 0.006 of it on squad2-dev (docs/benchmarks.md, "The sentence reader").
READER_WEIGHT = 0.5
# Where the reader reads, embedding similarity joins the scores of its best sentences only (the
# others are embedded after the quote is shown): end to end it quoted the answer as often on
# docqa-dev and more often on squad2-dev and RGB than without it (docs/benchmarks.md).
SIMILAR_SENTENCES = 12
# Passages shown to the model (the tokens they may take in all are the policy's).
DEFAULT_PASSAGES = 3
# The second passage is quoted beside the first when it is from the same document and scores at
# least this share of the first's. Over the engine's passages (benchmarks/second_passage.py, retired), the
# quotes hold the answer for docqa-dev 0.60 with one, 0.6375 / 0.70 / 0.7125 at shares 0.9 / 0.8 /
# 0.7 (a second quote in 31% / 64% / 73% of answers), for squad2-dev 0.867, 0.908 / 0.908 / 0.929
# (13% / 26% / 41%): below 0.8 more second quotes add little. From other documents they cited
# RGB's noise passages (citation precision 0.649 -> 0.581), so those are never quoted second.
SECOND_QUOTE_SHARE = 0.8
# A passage is its best sentence with the one before and the one after, within its block, where they
# fit. Text laid out in lines (a manual, a list, a table, a hard-wrapped file) grows by a sentence
# each way again while it fits: there a value often sits a line or two below the sentence that
# describes it (an option's default, an exit status's meaning). Over the engine's passages
# (benchmarks/second_passage.py, retired; second quotes at 0.8) the quotes hold docqa-dev's answer 0.70 ->
# 0.7375; squad2-dev's and RGB's paragraphs, one line each, are unchanged. Grown so for prose too,
# squad2-dev's best passage held an unanswerable question's distractor 0.672 -> 0.713.
MAX_PASSAGE_TOKENS = 160


@dataclass(frozen=True)
class Answerable:
    """How likely the sources are to answer: the coverage of the question by an answer-shaped
    sentence (`answerability`), the reader's probability that its best sentence answers (None
    when no reader read them), and the multilingual embedder's best similarity where it read them
    instead."""

    coverage: float = 1.0
    read: float | None = None
    # The multilingual embedder's best closeness of a sentence to the question, where it read
    # them in the reader's place (a question in a language the reader does not read, or sources
    # mostly in one it does not read).
    similarity: float | None = None
    # Whether the sentence reader reads the question itself (sources in another language): that
    # direction has a floor of its own, the similarities running lower.
    question_read: bool = False

    @property
    def value(self) -> float:
        """The coverage, times the reader's probability when it read the sources: apart, each
        tells answerable questions from the rest less well than together."""
        return self.coverage if self.read is None else self.read * self.coverage


@dataclass(frozen=True)
class Passage:
    """A run of sentences `[first, last]` of one chunk chosen as evidence, and its score."""

    source: int
    start: int  # character span in the chunk text
    end: int
    anchor: SentenceSpan  # the sentence that scored best
    score: float

    def text(self, hits: Sequence[SearchHit]) -> str:
        return hits[self.source].text[self.start : self.end]


def reader_candidates(
    hits: Sequence[SearchHit], sentences: Sequence[SentenceSpan], texts: Sequence[str]
) -> list[str]:
    """What the sentence reader reads of each sentence: the sentence, its document's title and
    heading path, and the first sentence of its paragraph when it is a later one."""
    first: dict[tuple[int, int], str] = {}
    for sentence, text in zip(sentences, texts, strict=True):
        first.setdefault((sentence.source, sentence.paragraph), text)
    candidates = []
    for sentence, text in zip(sentences, texts, strict=True):
        hit = hits[sentence.source]
        heading = " \u203a ".join(part for part in (hit.title, *hit.heading_path) if part)
        lead = first[(sentence.source, sentence.paragraph)]
        candidates.append(reader_input(text, heading, "" if lead is text else lead))
    return candidates


def reader_probability(logit: float) -> float:
    """The reader's logit as the probability that the sentence answers."""
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, logit))))


def answered_probability(read: Sequence[float], no_answer: float | None = None) -> float:
    """How surely the reader finds an answer among the sentences it read (`read`: their logits):
    its best sentence's probability; for a reader trained with the no-answer candidate
    (`no_answer`: that candidate's logit), the share the sentences take of a softmax over them
    and that candidate, which weighs each question's sentences against the question itself."""
    if no_answer is None:
        return reader_probability(max(read))
    total = sum(math.exp(max(-60.0, min(60.0, logit - no_answer))) for logit in read)
    return total / (1.0 + total)


def with_reader(scores: Sequence[float], read: Sequence[float], weight: float = READER_WEIGHT) -> list[float]:
    """The blend's `scores` plus `weight` times the reader's probability (`read`: its logit for
    each sentence, in order)."""
    return [score + weight * reader_probability(logit) for score, logit in zip(scores, read, strict=True)]


def with_similarity(
    scores: Sequence[float],
    texts: Sequence[str],
    question_vector: Vector,
    embed_many: Callable[[list[str]], list[Vector]],
    most: int = SIMILAR_SENTENCES,
) -> list[float]:
    """`scores` with the embedding similarity of the `most` best sentences to the question
    added at DENSE_WEIGHT, as the blend weighs it: only those are embedded before the quote."""
    best = sorted(range(len(scores)), key=lambda i: -scores[i])[:most]
    raised = list(scores)
    for index, vector in zip(best, embed_many([texts[i] for i in best]), strict=True):
        raised[index] += DENSE_WEIGHT * closeness(question_vector, vector)
    return raised


def score_sentences(
    question: str,
    sentences: Sequence[SentenceSpan],
    question_vector: Vector | None,
    texts: Sequence[str],
) -> list[float]:
    """The evidence score of each sentence (whose text is `texts[i]`) for `question`."""
    asked = content_terms(question)
    if not sentences:
        return []
    frequency: dict[str, int] = {}
    for sentence in sentences:
        for term in sentence.terms:
            if term in asked:
                frequency[term] = frequency.get(term, 0) + 1
    total = len(sentences)
    idf = {term: math.log(1.0 + total / frequency.get(term, 0.5)) * weight for term, weight in asked.items()}
    norm = sum(idf.values()) or 1.0
    by_position = {(s.source, s.position): s for s in sentences}
    ranks = sorted({s.source for s in sentences})
    kinds = asked_kinds(question)
    # The values a sentence could answer with: what earns the typed bonus and what sources agree on.
    values = [asked_tokens(text, question, kinds) if kinds else set() for text in texts]
    agreed = agreement_of([s.source for s in sentences], values)
    scores: list[float] = []
    for sentence, found, shared in zip(sentences, values, agreed, strict=True):
        keyword = covered_weight(idf, sentence, lead_in(sentence, by_position))
        dense = 0.0
        if question_vector is not None and sentence.vector is not None:
            dense = closeness(question_vector, sentence.vector)
        rank = 1.0 / (1.0 + ranks.index(sentence.source))
        score = KEYWORD_WEIGHT * keyword / norm + DENSE_WEIGHT * dense + RANK_WEIGHT * rank
        score += AGREEMENT_WEIGHT * shared
        if found:
            score += TYPED_BONUS
        scores.append(score)
    return scores


def select_passages(
    hits: Sequence[SearchHit],
    sentences: Sequence[SentenceSpan],
    scores: Sequence[float],
    count_tokens: Callable[[str], int],
    budget_tokens: int = EVIDENCE_TOKENS,
    passages: int = DEFAULT_PASSAGES,
) -> list[Passage]:
    """The best sentences grown into passages (sentences before and after, in turn, while they fit),
    non-overlapping, best first, within `budget_tokens` in all."""
    by_chunk: dict[int, list[SentenceSpan]] = {}
    for sentence in sentences:
        by_chunk.setdefault(sentence.source, []).append(sentence)
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], sentences[i].source, i))
    chosen: list[Passage] = []
    used_tokens = 0
    taken: set[tuple[int, int]] = set()
    for index in order:
        if len(chosen) >= passages:
            break
        anchor = sentences[index]
        if (anchor.source, anchor.position) in taken:
            continue
        room = min(MAX_PASSAGE_TOKENS, budget_tokens - used_tokens)
        passage = _grow(hits, by_chunk[anchor.source], anchor, scores[index], count_tokens, room, taken)
        if passage is None:
            continue
        chosen.append(passage)
        used_tokens += count_tokens(passage.text(hits))
        for sentence in by_chunk[anchor.source]:
            if passage.start <= sentence.start and sentence.end <= passage.end:
                taken.add((sentence.source, sentence.position))
    return chosen


def _grow(
    hits: Sequence[SearchHit],
    chunk: Sequence[SentenceSpan],
    anchor: SentenceSpan,
    score: float,
    count_tokens: Callable[[str], int],
    room: int,
    taken: set[tuple[int, int]],
) -> Passage | None:
    text = hits[anchor.source].text
    positions = {s.position: s for s in chunk}
    first = last = anchor
    if count_tokens(text[first.start : last.end]) > room:
        return None
    while True:
        grew = False
        for step in (-1, 1):  # the sentence before first: it carries the subject more often
            neighbour = positions.get((first if step < 0 else last).position + step)
            if neighbour is None:
                continue
            # A passage stays within its block (a paragraph, table or list, with what is indented
            # below it: an option's line and its description), except that a lead-in ("as
            # follows:") takes what it leads in to: a code example, a list, a table.
            leads_in = step > 0 and text[last.start : last.end].rstrip().endswith(":")
            if neighbour.block != anchor.block and not leads_in:
                continue
            if (neighbour.source, neighbour.position) in taken:
                continue
            grown = (neighbour, last) if step < 0 else (first, neighbour)
            if count_tokens(text[grown[0].start : grown[1].end]) <= room:
                first, last = grown
                grew = True
        if not grew or "\n" not in text[first.start : last.end]:
            break  # prose keeps one sentence each way; text laid out in lines grows on
    return Passage(anchor.source, first.start, last.end, anchor, score)
