"""What answering produces: the finished `Answer` and the events streamed on the way to it.

A client that streams sees `SourcesEvent`, then tokens and checked sentences as they come,
then the `DoneEvent` holding the same `Answer` a client that waits would get.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from footnote.answer.citations import AnswerSentence, Citation
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

    def to_dict(self) -> dict[str, Any]:
        # A withheld answer shows no sentence and no citation: what a client renders is what
        # footnote decided. The withheld sentences are kept apart, for inspection.
        shown = [] if self.withheld else self.sentences
        return {
            "question": self.question,
            "answer": self.text,
            "raw_answer": self.raw_text,
            "model": self.model,
            "abstained": self.abstained,
            "relevance": round(self.relevance, 4),
            "extracted": self.extracted,
            "match": round(self.match, 4),
            "unrelated": self.unrelated,
            "evidence_score": round(self.evidence_score, 4),
            "answerability": round(self.answerability, 4),
            "prompt_tokens": self.prompt_tokens,
            "usage": self.usage.to_dict(),
            "truncated": self.truncated,
            "unknown_words": list(self.unknown_words),
            "sentences": [sentence_dict(s) for s in shown],
            "citations": [asdict(c) for s in shown for c in s.citations],
            "withheld_sentences": [sentence_dict(s) for s in self.sentences] if self.withheld else [],
            "sources": [source_dict(number, hit) for number, hit in enumerate(self.sources, start=1)],
            "related_questions": list(self.related_questions),
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
        }


def sentence_dict(sentence: AnswerSentence) -> dict[str, Any]:
    return {
        "text": sentence.text,
        "supported": sentence.supported,
        "flagged": sentence.flagged,
        "is_claim": sentence.is_claim,
        "score": round(sentence.score, 4),
        "model_markers": sentence.model_markers,
        "corrected": sentence.corrected,
        "citations": [c.number for c in sentence.citations],
    }


def source_dict(number: int, hit: SearchHit) -> dict[str, Any]:
    data = asdict(hit)
    data["number"] = number
    data["heading_path"] = list(hit.heading_path)
    return data


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
        """The answer from what the model wrote (`raw`) and the checked `sentences`."""
        text = render_markdown(sentences) if sentences else raw
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
