"""Citation checking: each answer sentence is matched to the source span that supports it.

The model's own `[n]` markers are hints, never trusted: a marker is kept only when source n
really supports the sentence, a wrong one is replaced by the best supporting source, a
missing one is added, and a sentence no source supports is flagged.

Rules for what counts as a claim:
- A sentence with at least one content word is a claim (`is_claim=True`); it is either
  supported with citations or unsupported (`supported=False`, `flagged=True`), however short.
- A sentence with no content word ("Sure.", "Yes, it is."), a question ("Who bought it?"),
  a lead-in ending in a colon ("The sources say:"), or the prescribed no-answer sentence,
  is not a claim: `is_claim=False`, `supported=False`, no citations, and
  `flagged=False`. Consumers flag with `flagged`, not with `not supported`.

How well a span matches a text is scored in `footnote.answer.spans`; this module decides from
those scores (and a support judge's, when one is configured) which sources a sentence cites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from footnote.answer.judge import SupportJudge
from footnote.answer.policy import JUDGE_THRESHOLD
from footnote.answer.prompt import NO_ANSWERS
from footnote.answer.sentence_spans import SentenceSpan
from footnote.answer.spans import Scored, SpanScores, holds_novel
from footnote.answer.terms import content_terms
from footnote.core.hits import SearchHit
from footnote.core.sentences import split_sentences, strip_markers
from footnote.models.base import Embedder, Vector
from footnote.models.sentence_reader import SentenceReader

# Calibrated on the labelled set in tests/unit/test_citations.py. Lexical score alone:
# copied or paraphrased sentences 0.67-1.00, fabricated ones sharing a few words 0.06-0.50.
# Averaged with the hashing test embedder: 0.57-0.96 against 0.08-0.40. 0.55 lies in both
# gaps. Known miss: a claim with one content word swapped ("Fresnel also invented the
# telescope in 1822.") scores 0.55-0.80 and passes; only an entailment model would catch it.
# Later work recalibrates on a dataset and with the real embedder.
DEFAULT_THRESHOLD = 0.55

# An answer fragment ("Norway.", "The answer is: 2022.") claims what the question completes
# it to; scored alone, any span that merely contains "2022" would support it. Sentences with
# at most this many content terms are scored together with the question's terms.
FRAGMENT_TERMS = 2
# Sources that support a sentence almost as well as the best one are cited beside it, so a
# reader sees which claims several sources corroborate. On RGB en_fact (reading, 100 answers
# re-checked) a margin of 0.10 raised citation precision 0.594 -> 0.622; beyond 0.2 it fell.
CORROBORATION_MARGIN = 0.10
MAX_CITATIONS = 3
# With a support judge configured, it re-reads the best span of at most this many sources, those
# whose overlap-and-embedding score reaches the floor: below it a span shares too little with the
# sentence to be where it came from. The judge's probability then decides, against its own threshold.
JUDGED_SOURCES = 3
JUDGED_FLOOR = 0.35

# A question asks and a lead-in ("The sources say:") announces; neither claims anything itself.
_NOT_CLAIM_ENDINGS = ("?", ":", "\uff1f", "\uff1a")
_NO_ANSWER_KEYS = frozenset(re.sub(r"\W+", " ", text.lower()).strip() for text in NO_ANSWERS)


@dataclass
class Citation:
    """One footnote: `quote` is verbatim chunk text and `document_text[start:end] == quote`."""

    number: int  # 1-based position of the source in the list given to the model
    chunk_id: int
    document_id: int
    path: str
    quote: str
    start: int
    end: int
    page: int | None
    score: float


@dataclass
class AnswerSentence:
    """One answer sentence after checking; `text` has the model's markers stripped."""

    text: str
    citations: list[Citation]
    supported: bool
    model_markers: list[int]
    corrected: bool  # the model wrote markers and the checker dropped or replaced some
    is_claim: bool = True
    score: float = 0.0  # best support score any source span reached

    @property
    def flagged(self) -> bool:
        """A claim that no source supports: shown to the user as unsupported."""
        return self.is_claim and not self.supported


def is_no_answer(text: str) -> bool:
    """Whether `text` (markers stripped) is the prescribed no-answer sentence."""
    return re.sub(r"\W+", " ", text.lower()).strip() in _NO_ANSWER_KEYS


class CitationChecker:
    """Checks answer sentences against the sources the model was given, numbered from 1."""

    def __init__(
        self,
        sources: Sequence[SearchHit],
        embedder: Embedder | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        question: str | None = None,
        judge: SupportJudge | None = None,
        judge_threshold: float = JUDGE_THRESHOLD,
    ) -> None:
        self.judge = judge
        self.judge_threshold = judge_threshold
        self.question = question.strip() if question else ""
        self._question_terms = content_terms(self.question)
        self.sources = list(sources)
        self.embedder = embedder
        self.threshold = threshold
        self.spans = SpanScores(self.sources, embedder, self.question)

    def check(self, sentence: str) -> AnswerSentence:
        """Check one sentence (markers included) and cite the spans that support it."""
        text, markers = strip_markers(sentence)
        claim = content_terms(text)
        if not claim or is_no_answer(text) or text.endswith(_NOT_CLAIM_ENDINGS):
            return AnswerSentence(text, [], False, markers, corrected=bool(markers), is_claim=False)
        novel = self._novel(claim)
        if novel is not None and not novel:
            # It only restates the question: whatever it shares with a source, it answers nothing.
            return AnswerSentence(text, [], False, markers, corrected=bool(markers))
        completed, claim = self._completed(text, claim)
        best = self.spans.best_per_source(completed, claim, novel)
        threshold = self.threshold
        if self.judge is not None:
            hypothesis = text if completed == text else f'The answer to "{self.question}" is {text}'
            best, threshold = self._judged(hypothesis, best), self.judge_threshold
        numbers = [n for n in markers if 1 <= n <= len(best) and _reaches(best[n - 1], threshold)]
        if not numbers:
            top = _top_source(best, threshold)
            numbers = [top] if top is not None else []
        corrected = bool(markers) and numbers != markers
        top_score = max((score for score, _ in filter(None, best)), default=0.0)
        if numbers:
            numbers += _corroborating(best, numbers, max(threshold, top_score - CORROBORATION_MARGIN))
        citations = [self._citation(n, best[n - 1]) for n in numbers]
        return AnswerSentence(
            text,
            citations,
            supported=bool(citations),
            model_markers=markers,
            corrected=corrected,
            score=top_score,
        )

    def _novel(self, claim: dict[str, float]) -> dict[str, float] | None:
        """The terms a sentence adds beyond the question (None without a question): what it
        claims that the question did not already say, and what its span must contain."""
        if not self._question_terms:
            return None
        return {term: weight for term, weight in claim.items() if term not in self._question_terms}

    def corroborates(self, quote: AnswerSentence, sentence: AnswerSentence) -> bool:
        """Whether `quote` holds what `sentence` adds beyond the question (its answer)."""
        novel = self._novel(content_terms(sentence.text))
        return novel is not None and bool(novel) and holds_novel(novel, frozenset(content_terms(quote.text)))

    def sentence_spans(self, vectors: bool = True) -> list[SentenceSpan]:
        """Every single sentence of the sources with its terms (and embedding, unless `vectors`
        is false), for evidence selection."""
        return self.spans.sentence_spans(vectors)

    def embed_sentences(self, texts: list[str]) -> list[Vector]:
        """The vectors of sentences of the sources, kept for checking what the model writes."""
        return self.spans.embed_texts(texts)

    @property
    def question_vector(self) -> Vector | None:
        return self.spans.vector(self.question) if self.question else None

    def _completed(self, text: str, claim: dict[str, float]) -> tuple[str, dict[str, float]]:
        """The claim a sentence makes once a fragment is completed by the question's terms."""
        asked = self._question_terms
        if len(claim) > FRAGMENT_TERMS or not asked or claim.keys() >= asked.keys():
            return text, claim
        return f"{self.question} {text}", {**asked, **claim}

    def check_all(self, text: str) -> list[AnswerSentence]:
        """Split a whole answer into sentences and check each."""
        return [self.check(text[start:end]) for start, end in split_sentences(text)]

    def extract(self, question: str) -> AnswerSentence | None:
        """The source sentence that best answers `question`, checked and cited: the extractive answer."""
        claim = content_terms(question)
        if not claim:
            return None
        best = self.spans.best_per_source(question, claim)
        scored = [entry for entry in best if entry is not None and not entry[1].is_pair]
        if not scored:
            return None
        candidate = max(scored, key=lambda entry: entry[0])[1]
        return self.check(self.spans.quote(candidate))

    def quoted(self, source: int, start: int, end: int, score: float) -> AnswerSentence:
        """A verbatim span of source `source` (0-based; chunk offsets) as a cited answer sentence."""
        hit = self.sources[source]
        quote = hit.text[start:end]
        text = " ".join(quote.split())  # shown on one line; the footnote keeps the verbatim span
        citation = Citation(
            source + 1,
            hit.chunk_id,
            hit.document_id,
            hit.path,
            quote,
            hit.start + start,
            hit.start + end,
            hit.page,
            score,
        )
        return AnswerSentence(text, [citation], True, [], corrected=False, score=score)

    def question_match(self, question: str) -> float:
        """How well the best source span matches the question (same score as support): low when
        the sources are about something else. 1.0 for a question with no content word to match."""
        return self.spans.question_match(question)

    def question_relevance(self, question: str, citations: Sequence[Citation]) -> float:
        """How well the cited spans match the question itself (same score as support), 0 without citations."""
        cited = {
            (
                c.number - 1,
                c.start - self.sources[c.number - 1].start,
                c.end - self.sources[c.number - 1].start,
            )
            for c in citations
        }
        return self.spans.spans_match(question, cited)

    def _judged(self, hypothesis: str, best: list[Scored | None]) -> list[Scored | None]:
        """`best` rescored by the judge: the leading sources' best spans get its probability,
        every other source drops out."""
        assert self.judge is not None
        scored = [(entry[0], index, entry[1]) for index, entry in enumerate(best) if entry is not None]
        leading = sorted(
            (entry for entry in scored if entry[0] >= JUDGED_FLOOR), key=lambda entry: (-entry[0], entry[1])
        )[:JUDGED_SOURCES]
        probabilities = self.judge.support([(self.spans.quote(span), hypothesis) for _, _, span in leading])
        judged: list[Scored | None] = [None] * len(best)
        for (_, index, span), probability in zip(leading, probabilities, strict=True):
            judged[index] = (probability, span)
        return judged

    def _citation(self, number: int, best: Scored | None) -> Citation:
        assert best is not None  # only called for sources that reached the threshold
        score, candidate = best
        hit = self.sources[number - 1]
        return Citation(
            number=number,
            chunk_id=hit.chunk_id,
            document_id=hit.document_id,
            path=hit.path,
            quote=self.spans.quote(candidate),
            start=hit.start + candidate.start,
            end=hit.start + candidate.end,
            page=hit.page,
            score=score,
        )


def _reaches(entry: Scored | None, threshold: float) -> bool:
    return entry is not None and entry[0] >= threshold


def _top_source(best: list[Scored | None], threshold: float) -> int | None:
    """The source (numbered from 1) with the best score at or above `threshold`."""
    top: int | None = None
    top_score = threshold
    for number, entry in enumerate(best, start=1):
        if entry is None or entry[0] < top_score:
            continue
        # Strictly greater once one is found: on a tie the earlier, higher-ranked source wins.
        if top is None or entry[0] > top_score:
            top, top_score = number, entry[0]
    return top


def _corroborating(best: list[Scored | None], cited: list[int], floor: float) -> list[int]:
    """Further sources whose best span scores at least `floor`, strongest first, up to
    `MAX_CITATIONS` citations in all."""
    others = [
        (entry[0], number)
        for number, entry in enumerate(best, start=1)
        if entry is not None and entry[0] >= floor and number not in cited
    ]
    others.sort(key=lambda pair: (-pair[0], pair[1]))
    return [number for _, number in others[: max(0, MAX_CITATIONS - len(cited))]]


@dataclass(frozen=True)
class SupportModels:
    """The models that decide whether a source supports a sentence: the embedder, averaged with
    word overlap (None: overlap alone), the support judge that re-reads the best spans, when
    one is configured, and the sentence reader that chooses the evidence (None: the blend alone)."""

    embedder: Embedder | None
    judge: SupportJudge | None = None
    reader: SentenceReader | None = None  # reads each source sentence for the evidence
    # Reads a question in a language the sentence reader does not beside each source sentence
    # (a Chinese question over English manuals): a multilingual embedder; None: the blend alone.
    multilingual: Embedder | None = None

    def checker(
        self, sources: Sequence[SearchHit], question: str, judge_threshold: float = JUDGE_THRESHOLD
    ) -> CitationChecker:
        """A checker of sentences answering `question` from `sources`."""
        return CitationChecker(
            sources, self.embedder, question=question, judge=self.judge, judge_threshold=judge_threshold
        )
