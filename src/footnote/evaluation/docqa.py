"""Answer evaluation over a folder of real documents with questions about them.

A set is a folder holding `corpus/` (the documents, any format footnote ingests) and
`questions.jsonl`, one item per line:
`{"id", "question", "answers": [...], "source": "file name" | null, "evidence", "kind"}`.
Items with no answers (`kind: "unanswerable"`) must be declined.

The corpus is ingested as a user would (`footnote ingest`), every question is asked end to
end (retrieval, evidence selection, generation, checking) through the streaming engine, and
each answer is scored:

- correct: the answer text contains one of the accepted answers (NFKC, case, spacing and
  punctuation normalised on both sides);
- correct and cited: correct, and one of its citations quotes a span that contains the answer;
- right document: one of its citations points into the item's `source` document;
- abstained: the answer says the documents do not contain it (no citation);
- states the distractor: an unanswerable item with `plausible` spans (SQuAD 2.0's) answered,
  not declined, with one of them in its text;
- says it twice: two of the answer's sentences say the same thing (`says_again`);
- degenerate: sentences the model wrote that are a loop or mostly repeated words (`is_degenerate`);
- unsupported shown / written: claims no source supports (`flagged`) among the sentences shown
  (never any) and among those the model wrote (left out of the answer);
- key points (broad questions: summaries, how-tos, lists, comparisons): an item with
  `key_points` (each a list of alternative verbatim spans) and `min_points` is complete when at
  least `min_points` of its points appear, case and spacing aside, in the answer or in the quotes
  of its citations (`points_found`); `sources` may list several documents;
- words: the length of the answer as shown (quotes in it included), in words, a run of CJK
  characters counting one word a character;
- latency: seconds to the whole answer, and to the first checked sentence.
"""

from __future__ import annotations

import re
import statistics
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from footnote.answer.result import Answer, DoneEvent, SentenceEvent
from footnote.answer.terms import says_twice
from footnote.application.answers import AnswerRequest, AnswerService
from footnote.config import Settings
from footnote.core.cjk import count_words
from footnote.core.loops import is_degenerate
from footnote.core.stats import percentile
from footnote.evaluation.datasets import DocSetError, read_jsonl, record_fields
from footnote.models.cpu import machine

UNANSWERABLE = "unanswerable"
QUESTIONS_FILE = "questions.jsonl"
CORPUS_FOLDER = "corpus"


@dataclass(frozen=True)
class DocQuestion:
    id: str
    question: str
    answers: tuple[str, ...]
    source: str | None
    evidence: str | None
    kind: str
    plausible: tuple[str, ...] = ()  # the distractor spans of an unanswerable item
    key_points: tuple[tuple[str, ...], ...] = ()  # a broad question's points, each as alternatives
    min_points: int = 0  # the points a complete answer holds
    sources: tuple[str, ...] = ()  # every document that holds the answer (`source` among them)

    @property
    def answerable(self) -> bool:
        return bool(self.answers or self.key_points)


@dataclass
class DocOutcome:
    id: str
    kind: str
    question: str
    answer: str
    correct: bool
    correct_cited: bool
    right_document: bool
    abstained: bool
    seconds: float
    first_sentence_seconds: float | None
    prompt_tokens: int = 0
    cited: list[str] = field(default_factory=list)
    answerability: float = 1.0  # the engine's answerability signal (evidence readers)
    match: float = 0.0  # how well the best source span matched the question
    states_distractor: bool | None = None  # None: the item has no distractor
    says_twice: bool = False
    degenerate: int = 0  # sentences shown that are a loop or mostly repeated words
    unsupported_shown: int = 0  # flagged sentences among those shown: none ever is
    unsupported_written: int = 0  # flagged sentences the model wrote, left out of the answer
    answerable: bool = True
    points: int | None = None  # key points found (None: the item has none)
    key_points: int = 0
    complete: bool | None = None  # at least the item's min_points found (None: no key points)
    words: int = 0  # the answer as shown, in words


def is_doc_set(path: Path, corpus: Path | None = None) -> bool:
    """Whether `path` is a document question set: a folder with questions and a corpus (its own
    `corpus/`, or `corpus` given: a set of questions about another set's documents)."""
    documents = corpus if corpus is not None else path / CORPUS_FOLDER
    return path.is_dir() and (path / QUESTIONS_FILE).is_file() and documents.is_dir()


def load_doc_questions(
    folder: Path,
    limit: int | None = None,
    skip: int = 0,
    per_source: int | None = None,
    questions: Path | None = None,
    corpus: Path | None = None,
) -> list[DocQuestion]:
    """The items of `folder/questions.jsonl` (or of `questions`, another file of the same form
    about `folder`'s documents): the first `limit` after the first `skip`; with `per_source`, at
    most that many of each source document, spread evenly over its items."""
    if not is_doc_set(folder, corpus):
        raise DocSetError(
            f"{folder} is not a document question set: it needs {QUESTIONS_FILE} and a "
            f"{CORPUS_FOLDER}/ folder, or --corpus naming the folder of the documents it asks about"
        )
    items: list[DocQuestion] = []
    path = questions or folder / QUESTIONS_FILE
    if not path.is_file():
        raise DocSetError(f"{path} does not exist; pass --questions a questions.jsonl file")
    for number, raw in read_jsonl(path, DocSetError):
        with record_fields(path, number, "items need question and answers fields", DocSetError):
            answers = tuple(str(answer) for answer in raw.get("answers") or ())
            points = tuple(tuple(str(a) for a in point) for point in raw.get("key_points") or ())
            sources = tuple(str(name) for name in raw.get("sources") or ())
            source = raw.get("source") or (sources[0] if sources else None)
            item = DocQuestion(
                str(raw.get("id", number)),
                str(raw["question"]),
                answers,
                source,
                raw.get("evidence"),
                str(raw.get("kind") or ("factoid" if answers or points else UNANSWERABLE)),
                tuple(str(span) for span in raw.get("plausible") or ()),
                points,
                int(raw.get("min_points") or len(points)),
                sources or ((source,) if source else ()),
            )
        items.append(item)
    if per_source:
        items = spread_by_source(items, per_source)
    return items[skip:][:limit] if limit is not None else items[skip:]


def spread_by_source(items: Sequence[DocQuestion], most: int) -> list[DocQuestion]:
    """At most `most` items of each source, evenly spaced over its items, in their order."""
    by_source: dict[str | None, list[int]] = {}
    for index, item in enumerate(items):
        by_source.setdefault(item.source, []).append(index)
    kept: set[int] = set()
    for indexes in by_source.values():
        step = len(indexes) / most
        kept.update(indexes[int(k * step)] for k in range(min(most, len(indexes))))
    return [item for index, item in enumerate(items) if index in kept]


def normalise(text: str) -> str:
    """Text compared for containment: NFKC, lower case, one space between words."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


_PUNCTUATION = re.compile(r"[^\w]+")


def _bare(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", normalise(text)).split())


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether `text` holds one of `answers`, spacing, case and punctuation aside."""
    plain, bare = normalise(text), f" {_bare(text)} "
    for answer in answers:
        wanted = normalise(answer)
        # Whole words at the answer's edges: "1" is not found in "10", nor "32768" in "327680".
        edges = (r"(?<!\w)" if wanted[:1].isalnum() else "", r"(?!\w)" if wanted[-1:].isalnum() else "")
        if wanted and re.search(edges[0] + re.escape(wanted) + edges[1], plain):
            return True
        stripped = _bare(answer)
        if stripped and f" {stripped} " in bare:
            return True
    return False


def points_found(item: DocQuestion, text: str, quotes: Sequence[str]) -> int:
    """How many of `item`'s key points appear in `text` or in one of `quotes` (case and spacing
    aside, as broad-dev's README grades them)."""
    return len(key_points_in(item, [text, *quotes]))


def key_points_in(item: DocQuestion, texts: Sequence[str]) -> set[int]:
    """The key points of `item` (by index) that one of `texts` holds, case and spacing aside."""
    where = [normalise(part) for part in texts]
    return {
        index
        for index, point in enumerate(item.key_points)
        if any(normalise(alternative) in part for alternative in point for part in where)
    }


def score_doc_answer(
    item: DocQuestion, answer: Answer, seconds: float, first: float | None, prompt_tokens: int = 0
) -> DocOutcome:
    citations = answer.citations
    shown = "" if answer.abstained else answer.text
    correct = bool(item.answers) and contains_answer(shown, item.answers)
    quoted = correct and any(contains_answer(c.quote, item.answers) for c in citations)
    right = any(Path(c.path).name in item.sources for c in citations)
    points = None
    if item.key_points:
        quotes = [] if answer.abstained else [c.quote for c in citations]
        points = points_found(item, shown, quotes)
    distractor = None
    if item.plausible:
        distractor = not answer.abstained and contains_answer(answer.text, item.plausible)
    return DocOutcome(
        item.id,
        item.kind,
        item.question,
        answer.text,
        correct=correct,
        correct_cited=quoted,
        right_document=right,
        abstained=answer.abstained,
        seconds=seconds,
        first_sentence_seconds=first,
        prompt_tokens=prompt_tokens,
        cited=sorted({Path(c.path).name for c in citations}),
        answerability=round(answer.answerability, 4),
        match=round(answer.match, 4),
        states_distractor=distractor,
        says_twice=says_twice([s.text for s in answer.shown_sentences]),
        degenerate=degenerate_shown(answer),
        unsupported_shown=sum(s.flagged for s in answer.shown_sentences),
        unsupported_written=len(answer.unsupported_sentences),
        answerable=item.answerable,
        points=points,
        key_points=len(item.key_points),
        complete=None if points is None else points >= item.min_points,
        words=count_words(shown),
    )


def degenerate_shown(answer: Answer) -> int:
    """Sentences of a given answer that are degenerate (`is_degenerate`) and that the model wrote:
    a source's own words quoted whole (a list of mirror URLs) are the document's, not a loop."""
    if answer.abstained:
        return 0
    return sum(
        is_degenerate(sentence.text)
        and not any(" ".join(c.quote.split()) == " ".join(sentence.text.split()) for c in sentence.citations)
        for sentence in answer.shown_sentences
    )


def ask_timed(answers: AnswerService, question: str) -> tuple[Answer, float, float | None]:
    """The answer, the seconds it took, and the seconds to its first checked sentence."""
    started = time.perf_counter()
    first: float | None = None
    for event in answers.run(AnswerRequest(question)):
        if isinstance(event, SentenceEvent) and first is None:
            first = time.perf_counter() - started
        if isinstance(event, DoneEvent):
            return event.answer, time.perf_counter() - started, first
    raise AssertionError("the answer stream ended without a DoneEvent")


def evaluate_doc_questions(
    answers: AnswerService,
    items: Sequence[DocQuestion],
    on_question: Callable[[DocOutcome], None] | None = None,
) -> list[DocOutcome]:
    outcomes: list[DocOutcome] = []
    for item in items:
        answer, seconds, first = ask_timed(answers, item.question)
        if first is None:
            first = seconds  # an answer with no sentence is shown whole, when it is done
        tokens = answer.prompt_tokens
        outcome = score_doc_answer(item, answer, seconds, first, tokens)
        outcomes.append(outcome)
        if on_question:
            on_question(outcome)
    return outcomes


def doc_report(folder: Path, skip: int, settings: Settings, outcomes: Sequence[DocOutcome]) -> dict[str, Any]:
    """The evaluation of the set at `folder` as `--json` prints it: what was asked, with which
    settings, the figures per kind and every outcome."""
    return {
        "dataset": str(folder),
        "skipped": skip,
        "settings": {
            "llm": settings.llm,
            "llm_quantization": settings.llm_quantization,
            "embedder": settings.embedder,
            "top_k": settings.top_k,
            "reader": settings.reader,
            "evidence_tokens": settings.evidence_tokens,
            "sentence_reader": settings.sentence_reader,
        },
        "machine": machine(),
        "metrics": metrics_by_kind(outcomes),
        "questions": [vars(o) for o in outcomes],
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    value = percentile(values, fraction, interpolate=True)
    return None if value is None else round(value, 3)


def doc_metrics(outcomes: Sequence[DocOutcome]) -> dict[str, Any]:
    """Correctness, citation, abstention and latency figures over `outcomes`."""
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    factual = [o for o in answerable if o.complete is None]  # graded by answers, not key points
    seconds = [o.seconds for o in outcomes]
    firsts = [o.first_sentence_seconds for o in outcomes if o.first_sentence_seconds is not None]
    tokens = [o.prompt_tokens for o in outcomes if o.prompt_tokens]
    decoyed = [o for o in unanswerable if o.states_distractor is not None]
    return {
        "questions": len(outcomes),
        "answerable": len(answerable),
        "correct": _share(sum(o.correct for o in factual), len(factual)),
        "correct_cited": _share(sum(o.correct_cited for o in factual), len(factual)),
        "right_document": _share(sum(o.right_document for o in answerable), len(answerable)),
        "abstention": _share(sum(o.abstained for o in unanswerable), len(unanswerable)),
        "false_abstention": _share(sum(o.abstained for o in answerable), len(answerable)),
        "states_distractor": _share(sum(bool(o.states_distractor) for o in decoyed), len(decoyed)),
        "says_twice": sum(o.says_twice for o in outcomes),
        "degenerate": sum(o.degenerate for o in outcomes),
        "unsupported_shown": sum(o.unsupported_shown for o in outcomes),
        "unsupported_written": sum(o.unsupported_written for o in outcomes),
        "latency_p50": _percentile(seconds, 0.5),
        "latency_p90": _percentile(seconds, 0.9),
        "first_sentence_p50": _percentile(firsts, 0.5),
        "first_sentence_p90": _percentile(firsts, 0.9),
        "prompt_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else None,
        **_broad_metrics(outcomes),
    }


def _broad_metrics(outcomes: Sequence[DocOutcome]) -> dict[str, Any]:
    """Key-point figures, over the outcomes of items with key points; the answer's length in
    words over every answer that was not declined."""
    graded = [o for o in outcomes if o.complete is not None]
    words = [o.words for o in outcomes if not o.abstained]
    recall = [o.points / o.key_points for o in graded if o.points is not None and o.key_points]
    return {
        "complete": _share(sum(bool(o.complete) for o in graded), len(graded)),
        "key_point_recall": round(statistics.fmean(recall), 4) if recall else None,
        "words_p50": _percentile(words, 0.5),
        "words_max": max(words, default=None),
    }


def metrics_by_kind(outcomes: Sequence[DocOutcome]) -> dict[str, dict[str, Any]]:
    """`doc_metrics` for each kind of question, then for all of them under "all"."""
    kinds = sorted({o.kind for o in outcomes})
    by_kind = {kind: doc_metrics([o for o in outcomes if o.kind == kind]) for kind in kinds}
    by_kind["all"] = doc_metrics(outcomes)
    return by_kind


def choose_floor(outcomes: Sequence[DocOutcome], signal: str, most_false: float = 0.10) -> float:
    """The highest threshold on `signal` ("answerability" or "match") below which answers are
    declined, such that at most `most_false` of the answerable questions would be; outcomes
    must come from a run with that gate off."""
    answerable = sorted(getattr(o, signal) for o in outcomes if o.answerable)
    if not answerable:
        return 0.0
    allowed = int(most_false * len(answerable))
    return answerable[allowed] if allowed < len(answerable) else answerable[-1]


def gated(outcomes: Sequence[DocOutcome], signal: str, floor: float) -> list[DocOutcome]:
    """`outcomes` as they would be with answers below `floor` on `signal` declined."""
    result = []
    for o in outcomes:
        if getattr(o, signal) < floor and not o.abstained:
            o = replace(o, abstained=True, correct=False, correct_cited=False, right_document=False)
        result.append(o)
    return result
