"""What answering produces: the finished `Answer` and the events streamed on the way to it.

A client that streams sees `SourcesEvent`, then tokens and checked sentences as they come,
then the `DoneEvent` holding the same `Answer` a client that waits would get. `AnswerDetail`
is the answer as clients receive it: a pydantic model, so that the HTTP API's `footnote`
field, its OpenAPI spec and `footnote ask --json` all have this one shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from footnote.answer.citations import AnswerSentence, Citation, is_no_answer
from footnote.answer.render import render_markdown
from footnote.answer.usage import ANSWER_STEP, TokenUsage
from footnote.core.hits import SearchHit


@dataclass
class Answer:
    question: str
    text: str  # the answer with verified footnotes, as Markdown
    raw_text: str  # what the model wrote
    sentences: list[AnswerSentence]
    sources: list[SearchHit]
    model: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    relevance: float = 0.0  # how well the cited spans match the question
    withheld: bool = False  # citations found, but their relevance fell below the abstention threshold
    extracted: bool = False  # the model's text had no support; a source sentence was quoted instead
    related_questions: list[str] = field(default_factory=list)
    match: float = 0.0  # how well the best source span matches the question
    unrelated: bool = False  # the sources were taken not to answer (a floor, an unknown word)
    evidence_score: float = 0.0  # score of the best evidence passage (extract and evidence readers)
    answerability: float = 1.0  # how well the best answer-shaped sentence covers the question
    usage: TokenUsage = field(default_factory=TokenUsage)  # every model call, per step
    truncated: bool = False  # the answer stopped at its token limit
    unknown_words: list[str] = field(default_factory=list)  # names of the question no document holds

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the answer's prompt the model read (0 when nothing was generated)."""
        return self.usage.step(ANSWER_STEP).prompt

    @property
    def citations(self) -> list[Citation]:
        return [citation for sentence in self.sentences for citation in sentence.citations]

    @property
    def abstained(self) -> bool:
        return self.withheld or not self.citations

    @property
    def shown_sentences(self) -> list[AnswerSentence]:
        """The sentences a client shows: none of a withheld answer, and never a claim no source
        supports, so that what a client renders is what footnote decided (the others stay in
        `sentences`, for inspection)."""
        return [] if self.withheld else shown_of(self.sentences)

    @property
    def unsupported_sentences(self) -> list[AnswerSentence]:
        """The claims no source supports (`flagged`): written by the model, left out of the answer."""
        return [sentence for sentence in self.sentences if sentence.flagged]

    @property
    def shown_citations(self) -> list[Citation]:
        """The citations of the shown sentences."""
        return [citation for sentence in self.shown_sentences for citation in sentence.citations]

    def detail(self) -> AnswerDetail:
        """The answer as clients receive it: the HTTP API's `footnote` field and `--json` output."""
        shown, written = self.shown_sentences, shown_of(self.sentences)
        return AnswerDetail(
            question=self.question,
            answer=self.text,
            raw_answer=self.raw_text,
            model=self.model,
            abstained=self.abstained,
            relevance=round(self.relevance, 4),
            extracted=self.extracted,
            match=round(self.match, 4),
            unrelated=self.unrelated,
            evidence_score=round(self.evidence_score, 4),
            answerability=round(self.answerability, 4),
            prompt_tokens=self.prompt_tokens,
            usage=self.usage.to_dict(),
            truncated=self.truncated,
            unknown_words=list(self.unknown_words),
            sentences=[CheckedSentence.of(s) for s in shown],
            citations=[SpanCitation.of(c) for c in self.shown_citations],
            withheld_sentences=[CheckedSentence.of(s) for s in written] if self.withheld else [],
            unsupported_sentences=[CheckedSentence.of(s) for s in self.unsupported_sentences],
            sources=[AnswerSource.of(number, hit) for number, hit in enumerate(self.sources, start=1)],
            related_questions=list(self.related_questions),
            timings_ms={k: round(v, 1) for k, v in self.timings_ms.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        """The detail as plain Python values (what `footnote ask --json` prints)."""
        return self.detail().model_dump()


class StepUsage(BaseModel):
    """The tokens of one step's model calls, by the model's tokenizer."""

    prompt_tokens: int
    completion_tokens: int
    calls: int


class CheckedSentence(BaseModel):
    """One sentence of the answer after checking."""

    text: str = Field(description="the sentence, the model's markers stripped")
    supported: bool = Field(description="a source span supports it")
    flagged: bool = Field(description="a claim no source supports: never shown as part of the answer")
    is_claim: bool = Field(description="false for a question, a lead-in or the no-answer sentence")
    score: float = Field(description="the best support score any source span reached")
    model_markers: list[int] = Field(description="the [n] markers the model wrote")
    corrected: bool = Field(description="the checker dropped or replaced some of the model's markers")
    citations: list[int] = Field(description="the numbers of the sources it cites")

    @classmethod
    def of(cls, sentence: AnswerSentence) -> CheckedSentence:
        return cls(
            text=sentence.text,
            supported=sentence.supported,
            flagged=sentence.flagged,
            is_claim=sentence.is_claim,
            score=round(sentence.score, 4),
            model_markers=sentence.model_markers,
            corrected=sentence.corrected,
            citations=[c.number for c in sentence.citations],
        )


class SpanCitation(BaseModel):
    """One footnote: the verbatim span of a source that supports a sentence."""

    number: int = Field(description="the source's number: [number] in the answer")
    chunk_id: int
    document_id: int
    path: str
    quote: str = Field(description="verbatim document text: the document's text[start:end]")
    start: int = Field(description="character offset of the quote in the document's text")
    end: int
    page: int | None = Field(description="the page the quote is on, for sources with pages (PDF)")
    score: float = Field(description="how well the span supports the sentence")

    @classmethod
    def of(cls, citation: Citation) -> SpanCitation:
        return cls(**asdict(citation))


class AnswerSource(BaseModel):
    """One retrieved chunk the model was given, numbered as the answer's [n] markers count."""

    chunk_id: int
    document_id: int
    path: str
    title: str
    text: str
    start: int = Field(description="character offset of the chunk in the document's text")
    end: int
    heading_path: list[str]
    page: int | None
    score: float = Field(description="fused retrieval score; higher is better")
    keyword_rank: int | None = Field(description="1-based rank in the keyword list; null when absent there")
    keyword_score: float | None
    dense_rank: int | None = Field(description="1-based rank in the vector list; null when absent there")
    dense_score: float | None
    url: str | None
    rerank_score: float | None = Field(description="second-stage score; null when not reranked")
    language: str = Field(description="the chunk's language, as detected at ingest")
    number: int

    @classmethod
    def of(cls, number: int, hit: SearchHit) -> AnswerSource:
        return cls(**asdict(hit), number=number)


class AnswerDetail(BaseModel):
    """footnote's checked sentences and span-level citations of one answer, with its sources.

    `sentences` are those shown. A claim no source supports is never shown: it is in
    `unsupported_sentences`. A withheld answer shows no sentence and no citation; the sentences
    it would have shown are in `withheld_sentences`."""

    question: str
    answer: str = Field(description="the answer with verified footnotes, as Markdown")
    raw_answer: str = Field(description="what the model wrote")
    model: str
    abstained: bool = Field(description="withheld, or nothing cited: the documents do not answer")
    relevance: float = Field(description="how well the cited spans match the question")
    extracted: bool = Field(
        description="the model's text had no support; a source sentence was quoted instead"
    )
    match: float = Field(description="how well the best source span matches the question")
    unrelated: bool = Field(description="the sources were taken not to answer (a floor, an unknown word)")
    evidence_score: float = Field(
        description="the best evidence passage's score (extract and evidence readers)"
    )
    answerability: float = Field(description="how well the best answer-shaped sentence covers the question")
    prompt_tokens: int = Field(description="tokens of the answer's prompt (0 when nothing was generated)")
    usage: dict[str, StepUsage] = Field(description="tokens per step: answer, condense, related")
    truncated: bool = Field(description="the answer stopped at its token limit")
    unknown_words: list[str] = Field(description="words of the question no document holds")
    sentences: list[CheckedSentence] = Field(description="the checked sentences shown; none when withheld")
    citations: list[SpanCitation] = Field(description="every shown sentence's citations, in order")
    withheld_sentences: list[CheckedSentence] = Field(
        description="the sentences a withheld answer would have shown, for inspection"
    )
    unsupported_sentences: list[CheckedSentence] = Field(
        description="the claims the model wrote that no source supports (`flagged`): left out of the answer"
    )
    sources: list[AnswerSource] = Field(description="what the model was given, numbered from 1")
    related_questions: list[str]
    timings_ms: dict[str, float] = Field(description="milliseconds from the start at which each step ended")


def sentence_dict(sentence: AnswerSentence) -> dict[str, Any]:
    return CheckedSentence.of(sentence).model_dump()


def source_dict(number: int, hit: SearchHit) -> dict[str, Any]:
    return AnswerSource.of(number, hit).model_dump()


@dataclass(frozen=True)
class SourcesEvent:
    sources: list[SearchHit]
    model: str = ""  # the model that answers (by the question's language)


@dataclass(frozen=True)
class TokenEvent:
    text: str


@dataclass(frozen=True)
class SentenceEvent:
    index: int
    sentence: AnswerSentence


@dataclass(frozen=True)
class DoneEvent:
    answer: Answer


AnswerEvent = SourcesEvent | TokenEvent | SentenceEvent | DoneEvent


@dataclass(frozen=True)
class Asked:
    """The question being answered, its sources and what every answer to it shares: each way
    an answer can end (declined, withheld, written) builds it from here."""

    question: str
    sources: list[SearchHit]
    model: str  # the model that answers, by the question's language
    no_answer: str  # the prescribed no-answer sentence, in the question's language
    timings: dict[str, float]  # shared with the answer: steps ending later are added to it
    usage: TokenUsage

    def answer(self, raw: str, sentences: list[AnswerSentence], **fields: Any) -> Answer:
        """The answer from what the model wrote (`raw`) and the checked `sentences`. Its text is
        the shown ones (`shown_of`); when nothing is shown, or the claims were all left out and
        what is left says nothing (a notice, a lead-in), the no-answer sentence ends it: an
        answer whose every claim lacks a source is declined, never empty nor the model's text."""
        if _all_claims_left_out(sentences):
            sentences = [*sentences, AnswerSentence(self.no_answer, [], False, [], False, is_claim=False)]
        text = render_markdown(shown_of(sentences)) if sentences else self.no_answer
        return Answer(
            self.question,
            text,
            raw,
            sentences,
            self.sources,
            self.model,
            self.timings,
            usage=self.usage,
            **fields,
        )

    def declined(self, **fields: Any) -> Answer:
        """The no-answer sentence, with the sources shown and nothing generated."""
        return self.answer(self.no_answer, [], **fields)


def shown_of(sentences: list[AnswerSentence]) -> list[AnswerSentence]:
    """The sentences an answer shows: all but the claims no source supports (`flagged`)."""
    return [sentence for sentence in sentences if not sentence.flagged]


def _all_claims_left_out(sentences: list[AnswerSentence]) -> bool:
    """Whether claims were left out (`flagged`) and what is shown holds no answer: no supported
    claim, no no-answer sentence (a notice or a lead-in alone answers nothing)."""
    shown = shown_of(sentences)
    return len(shown) < len(sentences) and not any(s.is_claim or is_no_answer(s.text) for s in shown)
