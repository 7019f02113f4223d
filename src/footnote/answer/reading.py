"""Reading the sources: which of the retrieved chunks an answer reads, and by which model.

The sentence reader reads the sentences of the sources where it reads the question's language
and theirs; where most sources are in a language it does not read with the question's (a Chinese
question over English passages, an English one over Chinese passages), the multilingual embedder
reads them in its place (`footnote.answer.across`). `Reading.evidence` gives the passages most
likely to answer, how likely it is that any does (`Answerable`), and every sentence as it was read
(for the points of a broad answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from footnote.answer.across import across_languages
from footnote.answer.asks import answerability
from footnote.answer.citations import CitationChecker
from footnote.answer.evidence import (
    Answerable,
    Passage,
    answered_probability,
    reader_candidates,
    score_sentences,
    select_passages,
    with_reader,
    with_similarity,
)
from footnote.answer.points import ScoredSentences
from footnote.core.hits import SearchHit
from footnote.core.language import ENGLISH, UNKNOWN, reads
from footnote.models.base import Embedder
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE
from footnote.retrieval.retriever import RetrievalParams

if TYPE_CHECKING:
    from footnote.answer.engine import AnswerEngine


@dataclass(frozen=True)
class Reading:
    """How an answer in `language` reads its sources, with the engine's reader and embedders."""

    engine: AnswerEngine
    language: str = ENGLISH

    def retrieval(self) -> RetrievalParams:
        """What a question in this language is retrieved with: more sources
        (`across_language_sources`) where the multilingual embedder may read them in the sentence
        reader's place, the question's words being unable to meet the documents' (broad-dev's
        Chinese questions hold their key points in the first 5 English chunks 0.50 of the time,
        in the first 10 0.75). `kept` cuts them back where it does not read them."""
        params = self.engine.policy.retrieval
        if not self.may_read_across():
            return params
        return replace(params, limit=max(params.limit, self.engine.policy.across_language_sources))

    def kept(self, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits an answer reads: the usual number of them unless the multilingual embedder
        reads them (most of them in another language than the question)."""
        limit = self.engine.policy.retrieval.limit
        return hits if len(hits) <= limit or self.across(hits) is not None else hits[:limit]

    def evidence(
        self, question: str, checker: CitationChecker, reader_question: str, prose: bool = False
    ) -> tuple[list[Passage], Answerable, ScoredSentences]:
        """The passages of the sources most likely to answer `question`, best first, how likely
        it is that one of the sources answers at all (only by sentences holding the kind of token
        it asks for; `prose`, a broad question's, is not held to code: its procedure may be told
        in words), and every sentence as it was read; the sentence reader reads
        `reader_question`."""
        reader = self.engine.support.reader
        across = self.across(checker.sources)
        question_read = reader is not None and reads(reader.languages, self.language)
        reader_reads = question_read and across is None
        # Where the reader reads, only its best sentences are embedded before the quote
        # (`with_similarity`); the rest are embedded once the quote is shown, for checking what
        # the model writes.
        spans = checker.sentence_spans(vectors=not reader_reads and across is None)
        texts = [checker.sources[s.source].text[s.start : s.end] for s in spans]
        similarity: float | None = None
        # The embedder's question vector is made only for the blend that reads with it.
        question_vector = None if reader_reads or across is not None else checker.question_vector
        if across is not None and spans:
            spans, question_vector, similarity = across_languages(
                across, question, checker.sources, spans, texts
            )
        scores = score_sentences(question, spans, question_vector, texts)
        read: list[float] = []
        answered: list[float] = []  # the logits weighed against the no-answer candidate's
        no_answer: float | None = None
        if reader is not None and reader_reads and spans:
            candidates = reader_candidates(checker.sources, spans, texts)
            if reader.no_answer:
                reading = reader.read(reader_question, [*candidates, NO_ANSWER_CANDIDATE])
                read = reading.scores[:-1]
                *answered, no_answer = reading.answered or reading.scores
            else:
                read = answered = reader.score(reader_question, candidates)
            scores = with_reader(scores, read)
            if checker.embedder is not None and checker.question_vector is not None:
                scores = with_similarity(scores, texts, checker.question_vector, checker.embed_sentences)
        count_tokens = self.engine.generator.count_tokens
        passages = select_passages(
            checker.sources, spans, scores, count_tokens, self.engine.policy.evidence_tokens
        )
        # The reader joins the decision to decline only with its own floor set.
        floor = self.engine.policy.reader_floor
        best_read = answered_probability(answered, no_answer) if answered and floor else None
        scored = ScoredSentences(spans, texts, read or scores, read=bool(read))
        coverage = answerability(question, spans, texts, prose)
        answerable = Answerable(coverage, best_read, similarity, question_read=question_read)
        return passages, answerable, scored

    def may_read_across(self) -> bool:
        """Whether the multilingual embedder may read in the sentence reader's place: there is a
        reader, it does not read the question's language, and the embedder is on. With no reader
        at all, the blend alone reads."""
        support = self.engine.support
        reader = support.reader
        return (
            reader is not None
            and support.multilingual is not None
            and not reads(reader.languages, self.language)
        )

    def across(self, sources: Sequence[SearchHit]) -> Embedder | None:
        """The multilingual embedder, where it reads in the sentence reader's place: where most
        `sources` are in another language than the question, and the reader does not read both
        (a Chinese question over English passages, or an English one over Chinese passages).
        Within one language the blend's shared words read better (RGB zh_refine_dev end to end
        0.725 correct against 0.675)."""
        support = self.engine.support
        if support.reader is None or support.multilingual is None:
            return None
        foreign = [hit.language for hit in sources if hit.language not in (UNKNOWN, self.language)]
        if 2 * len(foreign) <= len(sources):
            return None
        languages = support.reader.languages
        if reads(languages, self.language) and all(reads(languages, language) for language in foreign):
            return None
        return support.multilingual
