"""Span scoring: how well each sentence (or adjacent pair) of the sources matches a text.

One score serves every decision that compares text with the sources: whether a span supports
an answer sentence (`footnote.answer.citations`), how well the sources match the question (the
relevance floor) and how well the cited spans do (the abstention gate). It averages word
overlap with embedding cosine, so a topical sentence with invented content scores low.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from footnote.answer.sentence_spans import SentenceSpan, sentence_spans
from footnote.answer.terms import content_terms, lexical_support
from footnote.core.hits import SearchHit
from footnote.core.vectors import closeness
from footnote.models.base import Embedder, Vector

# A claim naming a number or name the span lacks (the commonest fabrication) loses half its score.
MISSING_KEY_TERM_PENALTY = 0.5
# A two-sentence span is a less exact footnote and shares more words by chance.
PAIR_PENALTY = 0.05
# The words a sentence adds beyond the question are its answer: a span supports it only when it
# holds every number and name among them and at least this weighted share of the rest.
NOVEL_COVERAGE = 0.7
# Lexical overlap misses paraphrases; embedding cosine rewards mere topicality. Averaging
# asks for both, so a topical sentence with invented content stays below the threshold.
LEXICAL_WEIGHT = 0.5


@dataclass
class CandidateSpan:
    """A sentence, or two adjacent ones, of one source that a claim may rest on."""

    source: int  # 0-based index into the sources
    start: int  # span in the chunk text
    end: int
    terms: frozenset[str]
    is_pair: bool = False
    vector: Vector | None = None
    position: int = 0  # index of the (first) sentence in its chunk
    paragraph: int = 0
    block: int = 0


Scored = tuple[float, CandidateSpan]  # a span and how well it supports the sentence


class SpanScores:
    """The candidate spans of `sources`, embedded once (when a score first needs them), and
    their scores against any text."""

    def __init__(self, sources: Sequence[SearchHit], embedder: Embedder | None, question: str) -> None:
        self.sources = list(sources)
        self.embedder = embedder
        self.question = question
        self.candidates = candidate_spans(self.sources)
        self._question_vector: Vector | None = None
        self._embedded = embedder is None
        self._vectors: dict[str, Vector] = {}  # each text of the sources embedded so far

    def embed_texts(self, texts: Sequence[str]) -> list[Vector]:
        """The vectors of `texts` (spans of the sources), each embedded once and kept: those
        embedded before the quote are not embedded again for checking."""
        assert self.embedder is not None
        missing = list(dict.fromkeys(text for text in texts if text not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self.embedder.embed_many(missing), strict=True))
        return [self._vectors[text] for text in texts]

    def _embed(self) -> None:
        """Embeds every candidate, once: a question the sentence reader reads shows its quote
        before anything needs these vectors."""
        if self._embedded or self.embedder is None:
            return
        self._embedded = True
        vectors = self.embed_texts([self.quote(candidate) for candidate in self.candidates])
        for candidate, vector in zip(self.candidates, vectors, strict=True):
            candidate.vector = vector

    def sentence_spans(self, vectors: bool = True) -> list[SentenceSpan]:
        """Every single sentence of the sources with its terms, and with its embedding unless
        `vectors` is false, for evidence selection."""
        if vectors:
            self._embed()
        return [
            SentenceSpan(c.source, c.position, c.start, c.end, c.terms, c.vector, c.paragraph, c.block)
            for c in self.candidates
            if not c.is_pair
        ]

    def best_per_source(
        self, text: str, claim: dict[str, float], novel: dict[str, float] | None = None
    ) -> list[Scored | None]:
        """Each source's best-scoring span for `text`; with `novel`, spans lacking it score 0."""
        self._embed()
        vector = self.vector(text)
        best: list[Scored | None] = [None] * len(self.sources)
        for candidate in self.candidates:
            score = self.score(claim, vector, candidate)
            if novel and not holds_novel(novel, candidate.terms):
                score = 0.0
            current = best[candidate.source]
            if current is None or score > current[0]:
                best[candidate.source] = (score, candidate)
        return best

    def question_match(self, question: str) -> float:
        """How well the best source span matches the question (same score as support): low when
        the sources are about something else. 1.0 for a question with no content word to match."""
        claim = content_terms(question)
        if not claim:
            return 1.0
        self._embed()
        vector = self.vector(question)
        return max((self.score(claim, vector, candidate) for candidate in self.candidates), default=0.0)

    def spans_match(self, question: str, cited: set[tuple[int, int, int]]) -> float:
        """How well the best of the `cited` spans (source, start, end in the chunk) matches the
        question, 0 when none is cited or the question has no content word."""
        claim = content_terms(question)
        if not claim or not cited:
            return 0.0
        self._embed()
        vector = self.vector(question)
        scores = [
            self.score(claim, vector, candidate)
            for candidate in self.candidates
            if (candidate.source, candidate.start, candidate.end) in cited
        ]
        return max(scores, default=0.0)

    def score(self, claim: dict[str, float], vector: Vector | None, candidate: CandidateSpan) -> float:
        """How well `candidate` supports a claim with these terms and embedding, in [0, 1]."""
        score = lexical_support(claim, candidate.terms)
        if vector is not None and candidate.vector is not None:
            cosine = closeness(vector, candidate.vector)
            score = LEXICAL_WEIGHT * score + (1.0 - LEXICAL_WEIGHT) * cosine
        if any(weight > 1.0 and term not in candidate.terms for term, weight in claim.items()):
            score *= MISSING_KEY_TERM_PENALTY
        if candidate.is_pair:
            score = max(0.0, score - PAIR_PENALTY)
        return score

    def vector(self, text: str) -> Vector | None:
        """The embedding of `text`; the question's is made once, as the relevance floor, the
        extractive fallback and the relevance gate all score it."""
        if self.embedder is None:
            return None
        if text != self.question:
            return self.embedder.embed(text)
        if self._question_vector is None:
            self._question_vector = self.embedder.embed(text)
        return self._question_vector

    def quote(self, candidate: CandidateSpan) -> str:
        return self.sources[candidate.source].text[candidate.start : candidate.end]


def holds_novel(novel: dict[str, float], span_terms: frozenset[str]) -> bool:
    """Whether a span contains what a sentence adds beyond the question: every number and
    name of it, and most of its other words."""
    if any(weight > 1.0 and term not in span_terms for term, weight in novel.items()):
        return False
    return lexical_support(novel, span_terms) >= NOVEL_COVERAGE


def candidate_spans(sources: Sequence[SearchHit]) -> list[CandidateSpan]:
    sentences = sentence_spans(sources)
    singles = [
        CandidateSpan(
            s.source, s.start, s.end, s.terms, position=s.position, paragraph=s.paragraph, block=s.block
        )
        for s in sentences
    ]
    # Adjacent pairs support claims that join two source sentences ("He ... It ...").
    pairs = [
        CandidateSpan(a.source, a.start, b.end, a.terms | b.terms, True, position=a.position)
        for a, b in itertools.pairwise(sentences)
        if a.source == b.source
    ]
    return singles + pairs
