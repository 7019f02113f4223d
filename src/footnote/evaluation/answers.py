"""Answer evaluation on question/answer/passages data in the RGB format.

Each record holds a `query`, the gold `answer` and passages labelled `positive` (they
support the answer) or `negative` (distractors). Four runs are scored:

- reading: the engine answers from the question's own passages (positives plus negatives,
  `passages` in all, in a fixed shuffled order), no retrieval;
- unanswerable: the same, but with only negative passages, so the right reply is to abstain;
- unrelated: the reading passages of another question (half the list away), about something
  else entirely, so the right reply is to abstain;
- end to end: every passage of every question is pooled into one isolated index and the
  engine retrieves from it as it would for a user.

Metrics (all over the questions of one run):

- correctness: the answer text contains the gold answer, case-insensitively. A string is one
  required answer; a list holds required answers, each either a string or a list of accepted
  spellings (RGB's rule: every required answer must appear, any spelling of it will do).
- citation precision: of all citations the answers carry, the share whose cited passage is
  labelled positive for that question.
- citation recall (sentences): of all claim sentences in answers to answerable questions, the
  share carrying at least one citation to a positive passage. The checker only cites a span
  whose support score reached its threshold, so a cited span is one that supports the sentence.
- citation recall (answers): of the answers that are correct, the share carrying at least one
  citation to a positive passage.
- citation judged (with `--judge MODEL`): of all citations, the share whose quoted span the
  judge finds supporting its sentence. Judge the answers with a model the checker does not use,
  or the figure only repeats the checker's own verdict.
- unsupported rate: of all claim sentences the model wrote, the share no source supports
  (flagged); they are left out of the answer.
- unsupported shown: flagged sentences among those the answers show (none is ever shown: 0).
- abstention accuracy: on the unanswerable and unrelated runs, the share of questions where the
  engine abstained.
  False abstention: on the reading run, the share of answerable questions where it abstained.
- latency: mean and median seconds per question.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from footnote.answer.judge import SupportJudge
from footnote.answer.result import Answer
from footnote.application import Application
from footnote.application.answers import AnswerRequest, AnswerService
from footnote.core.document import Block, Document
from footnote.core.hits import SearchHit
from footnote.core.language import detect_language
from footnote.evaluation.datasets import AnswerDatasetError, read_jsonl, record_fields
from footnote.ingest.report import IngestReport, ProgressCallback

RUNS = ("reading", "unanswerable", "unrelated", "end_to_end")
ANSWERABLE_RUNS = ("reading", "end_to_end")
PATH_PREFIX = "rgb:"
# Share of the given passages that are distractors in the reading run: RGB's noise rate.
# 0.6 with 5 passages is 2 positives among 3 negatives.
DEFAULT_NOISE = 0.6
# A judged citation counts as entailed at this probability (the judge's own even odds).
JUDGED_SUPPORT = 0.5
# Shown as each source's title; without one the prompt would show the hash path, which models copy.
PASSAGE_TITLE = "Passage"
# Built into every answer evaluation's application: related questions are not measured, and
# each would cost one more generation per question; every question is answered, none is
# served from the answer cache.
UNMEASURED: dict[str, object] = {"related_questions": False, "answer_cache_size": 0}


@dataclass(frozen=True)
class AnswerRecord:
    id: str
    query: str
    answers: list[list[str]]  # required answers, each a list of accepted spellings
    positive: list[str]
    negative: list[str]


@dataclass
class QuestionOutcome:
    id: str
    query: str
    answer: str
    correct: bool
    abstained: bool
    citations: int
    positive_citations: int
    claim_sentences: int
    sentences_citing_positive: int
    unsupported_written: int  # claims no source supports (flagged): written, left out of the answer
    seconds: float
    relevance: float = 0.0
    extracted: bool = False
    entailed_citations: int | None = None  # citations the judge finds supporting, when one is given
    support: float = 0.0  # the highest support score among the answer's citations
    match: float = 0.0  # how well the best given source span matched the question
    unsupported_shown: int = 0  # flagged sentences among those shown: none ever is


@dataclass
class RunResult:
    run: str
    outcomes: list[QuestionOutcome] = field(default_factory=list)

    def metrics(self) -> dict[str, float | int | None]:
        o = self.outcomes
        citations = sum(x.citations for x in o)
        claims = sum(x.claim_sentences for x in o)
        correct = [x for x in o if x.correct]
        seconds = [x.seconds for x in o]
        abstained = _share(sum(x.abstained for x in o), len(o))
        answerable = self.run in ANSWERABLE_RUNS
        return {
            "questions": len(o),
            "correctness": _share(len(correct), len(o)) if answerable else None,
            "citation_precision": _share(sum(x.positive_citations for x in o), citations)
            if answerable
            else None,
            "citation_recall_sentences": _share(sum(x.sentences_citing_positive for x in o), claims)
            if answerable
            else None,
            "citation_recall_answers": _share(sum(x.positive_citations > 0 for x in correct), len(correct))
            if answerable
            else None,
            "citation_judged": _share(sum(x.entailed_citations or 0 for x in o), citations)
            if o and all(x.entailed_citations is not None for x in o)
            else None,
            "unsupported_rate": _share(sum(x.unsupported_written for x in o), claims),
            "unsupported_shown": sum(x.unsupported_shown for x in o),
            "abstention_accuracy": None if answerable else abstained,
            "false_abstention": abstained if answerable else None,
            "mean_seconds": statistics.fmean(seconds) if seconds else None,
            "median_seconds": statistics.median(seconds) if seconds else None,
        }

    def by_language(self) -> dict[str, RunResult]:
        """The run split by the language of each question, when it holds more than one."""
        languages: dict[str, list[QuestionOutcome]] = {}
        for outcome in self.outcomes:
            languages.setdefault(detect_language(outcome.query), []).append(outcome)
        if len(languages) < 2:
            return {}
        return {language: RunResult(self.run, outcomes) for language, outcomes in sorted(languages.items())}


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def load_records(path: Path, limit: int | None = None, skip: int = 0) -> list[AnswerRecord]:
    """Records of an RGB-style JSONL file (query, answer, positive and negative passages): the
    first `limit` after the first `skip`."""
    if not path.is_file():
        raise AnswerDatasetError(f"{path} is not a file; pass a JSONL file such as rgb/en_fact.jsonl")
    records: list[AnswerRecord] = []
    needs = "records need query, answer and positive fields"
    for number, raw in read_jsonl(path, AnswerDatasetError, skip):
        with record_fields(path, number, needs, AnswerDatasetError):
            records.append(
                AnswerRecord(
                    str(raw.get("id", number)),
                    str(raw["query"]),
                    gold_answers(raw["answer"]),
                    [str(p) for p in raw["positive"]],
                    [str(p) for p in raw.get("negative", [])],
                )
            )
        if limit is not None and len(records) >= limit:
            break
    return records


def gold_answers(answer: Any) -> list[list[str]]:
    if isinstance(answer, str):
        return [[answer]]
    if isinstance(answer, list):
        return [[str(a) for a in item] if isinstance(item, list) else [str(item)] for item in answer]
    raise TypeError(f"answer must be a string or a list, not {type(answer).__name__}")


def is_correct(text: str, answers: Sequence[Sequence[str]]) -> bool:
    lowered = text.lower()
    return bool(answers) and all(any(s.lower() in lowered for s in spellings) for spellings in answers)


def passage_path(text: str) -> str:
    return PATH_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def given_passages(
    record: AnswerRecord, passages: int, answerable: bool, seed: int = 0, noise: float = DEFAULT_NOISE
) -> list[SearchHit]:
    """The passages shown in the reading runs, as numbered sources in a fixed shuffled order.

    Answerable: RGB's rule, ceil(passages * noise) negatives and positives in the other slots
    (at least one); when either kind runs short the other fills its slots. Unanswerable:
    negatives only.
    """
    if answerable:
        wanted = max(1, passages - math.ceil(round(passages * noise, 9)))
        positives = record.positive[: max(wanted, passages - len(record.negative))]
        chosen = positives + record.negative[: passages - len(positives)]
    else:
        chosen = record.negative[:passages]
    random.Random(f"{seed}:{record.id}").shuffle(chosen)
    return [
        SearchHit(number, number, passage_path(text), PASSAGE_TITLE, text, 0, len(text))
        for number, text in enumerate(chosen, start=1)
    ]


def pooled_documents(records: Sequence[AnswerRecord]) -> Iterator[Document]:
    """Every distinct passage of every record, one document each, keyed by a hash of its text."""
    seen: set[str] = set()
    for record in records:
        for text in [*record.positive, *record.negative]:
            path = passage_path(text)
            if path in seen or not text.strip():
                continue
            seen.add(path)
            yield Document(
                path=path, format="text", title=PASSAGE_TITLE, text=text, blocks=[Block(text, 0, len(text))]
            )


def index_passages(
    app: Application, records: Sequence[AnswerRecord], progress: ProgressCallback | None = None
) -> IngestReport:
    """Index the pooled passages of `records` into `app` for the end-to-end run."""
    return app.ingestor().ingest_documents(pooled_documents(records), mtime=0.0, progress=progress)


def score_answer(
    record: AnswerRecord, answer: Answer, seconds: float, judge: SupportJudge | None = None
) -> QuestionOutcome:
    """One answer scored against the record's labels; with `judge`, also how many citations it
    finds supporting their sentence (quote as premise, sentence as claim, probability >= 0.5)."""
    positives = {passage_path(text) for text in record.positive}
    claims = [s for s in answer.sentences if s.is_claim]
    citing = [s for s in claims if any(c.path in positives for c in s.citations)]
    entailed = None
    if judge is not None:
        pairs = [(c.quote, s.text) for s in answer.sentences for c in s.citations]
        entailed = sum(probability >= JUDGED_SUPPORT for probability in judge.support(pairs))
    return QuestionOutcome(
        record.id,
        record.query,
        answer.text,
        correct=is_correct(answer.text, record.answers),
        abstained=answer.abstained,
        citations=len(answer.citations),
        positive_citations=sum(c.path in positives for c in answer.citations),
        claim_sentences=len(claims),
        sentences_citing_positive=len(citing),
        unsupported_written=sum(s.flagged for s in claims),
        seconds=seconds,
        relevance=answer.relevance,
        extracted=answer.extracted,
        entailed_citations=entailed,
        support=max((c.score for c in answer.citations), default=0.0),
        match=answer.match,
        unsupported_shown=sum(s.flagged for s in answer.shown_sentences),
    )


def evaluate_run(
    answers: AnswerService,
    records: Sequence[AnswerRecord],
    run: str,
    passages: int = 5,
    on_question: Callable[[str, QuestionOutcome], None] | None = None,
    noise: float = DEFAULT_NOISE,
    judge: SupportJudge | None = None,
) -> RunResult:
    """Answer every record in one run; the end-to-end run expects the pooled passages indexed.

    The unrelated run gives each question the reading passages of the question half the list
    away, so its sources are about something else entirely."""
    if run == "unrelated" and len(records) < 2:
        raise AnswerDatasetError("the unrelated run needs at least 2 questions, one's passages for another")
    result = RunResult(run)
    for position, record in enumerate(records):
        started = time.perf_counter()
        if run == "end_to_end":
            answer = answers.ask(AnswerRequest(record.query))
        elif run == "unrelated":
            other = records[(position + len(records) // 2) % len(records)]
            hits = given_passages(other, passages, True, noise=noise)
            answer = answers.ask(AnswerRequest(record.query, sources=tuple(hits)))
        else:
            hits = given_passages(record, passages, answerable=run == "reading", noise=noise)
            answer = answers.ask(AnswerRequest(record.query, sources=tuple(hits)))
        seconds = time.perf_counter() - started
        outcome = score_answer(record, answer, seconds, judge)
        result.outcomes.append(outcome)
        if on_question:
            on_question(run, outcome)
    return result


@dataclass(frozen=True)
class Calibration:
    """A relevance threshold chosen on one half of the questions and scored on the other.

    `gate` says what it withholds: "answers" (any answer whose cited spans match the question
    less, `ABSTAIN_BELOW`), "quotes" (only a quoted source sentence standing in for an
    unsupported answer, `QUOTE_ABOVE`), "support" (citations a support judge scores lower,
    `judge_threshold`: an answer left with none abstains) or "relevance" (sources whose best
    span matches the question less, `RELEVANCE_FLOOR`; fitted against the unrelated run).
    """

    gate: str
    threshold: float
    calibration_ids: list[str]
    held_out_abstention: float | None
    held_out_false_abstention: float | None


def calibrate_abstention(reading: RunResult, unanswerable: RunResult, gate: str = "answers") -> Calibration:
    """Pick the relevance threshold that best separates answerable from unanswerable questions.

    Both runs must have been made with every gate off (thresholds 0), so every answer carries
    its ungated relevance and support. Questions at even positions form the calibration split; the
    threshold maximises balanced accuracy there (abstain on unanswerable, answer on answerable;
    ties go to the lower threshold; candidates are midpoints between observed scores) and is
    then scored on the odd positions.
    """

    def split(result: RunResult, even: bool) -> list[QuestionOutcome]:
        return [o for i, o in enumerate(result.outcomes) if (i % 2 == 0) == even]

    def value(o: QuestionOutcome) -> float:
        return {"support": o.support, "relevance": o.match}.get(gate, o.relevance)

    def withheld(o: QuestionOutcome, t: float) -> bool:
        return o.abstained or (value(o) < t and (gate != "quotes" or o.extracted))

    def rates(
        answerable: list[QuestionOutcome], unanswerable: list[QuestionOutcome], t: float
    ) -> tuple[float, float]:
        abstain = [withheld(o, t) for o in unanswerable]
        false = [withheld(o, t) for o in answerable]
        return sum(abstain) / max(len(abstain), 1), sum(false) / max(len(false), 1)

    answer_cal, unanswer_cal = split(reading, True), split(unanswerable, True)
    values = sorted({value(o) for o in [*answer_cal, *unanswer_cal]})
    # Midpoints between observed scores, so the threshold does not sit on a question's score.
    candidates = [0.0, *((a + b) / 2 for a, b in itertools.pairwise(values))]
    best, best_score = 0.0, -1.0
    for t in candidates:
        abstention, false = rates(answer_cal, unanswer_cal, t)
        if abstention + (1 - false) > best_score + 1e-12:
            best, best_score = t, abstention + (1 - false)
    abstention, false = rates(split(reading, False), split(unanswerable, False), best)
    return Calibration(gate, best, [o.id for o in answer_cal], abstention, false)
