"""Answering: retrieve, prompt, stream, and check every sentence against the sources.

Sentences are checked as soon as they are complete, so a client sees each one
with its verified footnotes while the rest of the answer is still generating.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from footnote import tracing
from footnote.answer.budget import pack_sources
from footnote.answer.citations import (
    DEFAULT_JUDGE_THRESHOLD,
    AnswerSentence,
    Citation,
    CitationChecker,
    is_no_answer,
)
from footnote.answer.evidence import (
    DEFAULT_EVIDENCE_TOKENS,
    Passage,
    answerability,
    score_sentences,
    select_passages,
)
from footnote.answer.history import MAX_TURNS, condense_question, recent_turns
from footnote.answer.judge import SupportJudge
from footnote.answer.prompt import (
    build_evidence_messages,
    build_messages,
    no_reader_notice,
    wording,
)
from footnote.answer.related import suggest_related
from footnote.answer.render import render_markdown
from footnote.answer.sentences import SentenceAssembler, strip_markers
from footnote.answer.terms import named_words
from footnote.answer.usage import (
    ANSWER_STEP,
    CONDENSE_STEP,
    RELATED_STEP,
    MeteredGenerator,
    TokenUsage,
)
from footnote.config.settings import Settings
from footnote.errors import QueryError
from footnote.models.base import Embedder, GenerationParams, Generator, Message
from footnote.retrieval.hits import SearchHit
from footnote.retrieval.language import ENGLISH, UNKNOWN, detect_language
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams

MAX_QUESTION_CHARS = 4000
_WORDS = re.compile(r"\w+")
_LIST_NUMBER = re.compile(r"^\s*\d{1,3}[.)]\s+")
# Answers whose cited spans match the question less than this are withheld as "not in the
# documents". Off by default: `footnote eval answers --calibrate --limit 40` on RGB en_fact chose
# 0.70 on 20 questions (held out 20: abstention 0.60, false abstention 0.35), too costly to switch on.
ABSTAIN_BELOW = 0.0
# When nothing the model wrote is supported, the source sentence that best matches the question
# is quoted as the answer only if it matches at least this well; otherwise the answer abstains.
# Off by default: chosen on RGB en_fact questions 0-39 (0.69: abstention 0.275, false abstention
# 0.10), on the held-out 40-99 it withheld as many answerable questions (0.20) as unanswerable
# ones (0.217), so the match score does not tell them apart.
QUOTE_ABOVE = 0.0
# Readers: "evidence" quotes the best evidence passage first and has the model read only the
# few selected passages and add one checked sentence; "extract" quotes the passage alone and
# generates nothing; "sources" has the model read whole chunks (for large models).
EXTRACT_READER = "extract"
EVIDENCE_READER = "evidence"
SOURCES_READER = "sources"
READERS = (EXTRACT_READER, EVIDENCE_READER, SOURCES_READER)
# One short answer sentence needs few tokens; the limit also bounds a model that rambles.
EVIDENCE_ANSWER_TOKENS = 48
# The floors a user tunes default to the settings' values (calibrated there), so an engine
# built directly behaves as the application's does.
RELEVANCE_FLOOR: float = Settings.model_fields["relevance_floor"].default
EVIDENCE_FLOOR: float = Settings.model_fields["evidence_floor"].default


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


class LanguageModels(Protocol):
    """Which models read which languages."""

    def reads(self, language: str) -> bool:
        """Does the answer model read `language`?"""

    def generator_for(self, language: str) -> Generator | None:
        """Another model that reads `language`, or None when none is installed."""


@dataclass(frozen=True)
class Conversation:
    """What an answer knows besides its question: the earlier turns, the client's own
    instruction, and where the tokens of its model calls are counted."""

    history: Sequence[Message] | None
    instruction: str
    usage: TokenUsage


class AnswerEngine:
    def __init__(
        self,
        retriever: HybridRetriever,
        generator: Generator,
        embedder: Embedder | None,
        retrieval: RetrievalParams | None = None,
        generation: GenerationParams | None = None,
        abstain_below: float = ABSTAIN_BELOW,
        extract_fallback: bool = True,
        related_questions: bool = False,
        quote_above: float = QUOTE_ABOVE,
        judge: SupportJudge | None = None,
        judge_threshold: float = DEFAULT_JUDGE_THRESHOLD,
        relevance_floor: float = RELEVANCE_FLOOR,
        reader: str = EVIDENCE_READER,
        evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS,
        evidence_floor: float = EVIDENCE_FLOOR,
        history_turns: int = MAX_TURNS,
        languages: LanguageModels | None = None,
        decline_unknown: bool = True,
    ) -> None:
        # Decline a question that names a word (an identifier, an option, a name) no document holds.
        self.decline_unknown = decline_unknown
        self.history_turns = history_turns
        # Which model answers a question in a given language (None: the generator, always).
        self.languages = languages
        self.language = ENGLISH  # of the question being answered: the prompt's and the refusal's
        self.notice = ""  # said first when no model reads the question's language
        self.reader = reader
        self.evidence_tokens = evidence_tokens
        self.evidence_floor = evidence_floor
        self.relevance_floor = relevance_floor
        self.judge = judge
        self.judge_threshold = judge_threshold
        self.quote_above = quote_above
        self.related_questions = related_questions
        self.abstain_below = abstain_below
        self.extract_fallback = extract_fallback
        self.retriever = retriever
        self.generator = generator
        self.embedder = embedder
        self.retrieval = retrieval or RetrievalParams()
        self.generation = generation or GenerationParams()

    def source_budget(self) -> int:
        """Tokens left for sources once the answer and the prompt's own text are reserved."""
        return self.generator.context_length - self.generation.max_tokens - 256

    def condense(self, question: str, history: Sequence[Message], usage: TokenUsage) -> str:
        """`question` rewritten to stand alone after `history` (counted under "condense")."""
        generator = MeteredGenerator(self.generator, usage, CONDENSE_STEP)
        question = check_question(question)
        return condense_question(generator, history, question, self.generation, self.history_turns)

    def stream(
        self,
        question: str,
        history: Sequence[Message] | None = None,
        instruction: str = "",
        standalone: str | None = None,
        usage: TokenUsage | None = None,
    ) -> Iterator[AnswerEvent]:
        """Retrieve sources for `question` and answer from them, streaming events.

        With `history`, the question is first condensed into a standalone one (unless the
        caller already did: `standalone`), which retrieval and checking use; the recent turns
        go into the prompt. `instruction` is a client's own system message, kept below
        footnote's rules. `usage` collects the tokens of every model call.
        """
        question = check_question(question)
        engine = self.for_language(detect_language(question))
        usage = usage if usage is not None else TokenUsage()
        started = time.perf_counter()
        timings: dict[str, float] = {}
        query = standalone or question
        if history and standalone is None:
            query = engine.condense(question, history, usage)
            timings["condense"] = _ms_since(started)
        with tracing.span("retrieve", mode=self.retrieval.mode, limit=self.retrieval.limit):
            hits = self.retriever.search(query, self.retrieval)
        timings["retrieval"] = _ms_since(started)
        conversation = Conversation(history, instruction, usage)
        yield from engine._held_back(engine._answer_events(query, hits, started, timings, conversation))

    def for_language(self, language: str) -> AnswerEngine:
        """This engine as it answers a question in `language`: with the model that reads it, in
        that language's wording; when no installed model reads it, with the checked quote alone,
        after a notice that says so."""
        engine = copy.copy(self)
        engine.language = language if language != UNKNOWN else ENGLISH
        if self.languages is None or self.languages.reads(language):
            return engine
        generator = self.languages.generator_for(language)
        if generator is None:
            engine.reader, engine.notice = EXTRACT_READER, no_reader_notice(language)
        else:
            engine.generator = generator
        return engine

    def stream_sources(
        self,
        question: str,
        hits: Sequence[SearchHit],
        history: Sequence[Message] | None = None,
        instruction: str = "",
    ) -> Iterator[AnswerEvent]:
        """Answer from `hits` given by the caller (no retrieval), streaming events."""
        question = check_question(question)
        conversation = Conversation(history, instruction, TokenUsage())
        engine = self.for_language(detect_language(question))
        events = engine._answer_events(question, list(hits), time.perf_counter(), {}, conversation)
        yield from engine._held_back(events)

    def _held_back(self, events: Iterator[AnswerEvent]) -> Iterator[AnswerEvent]:
        """The answer's events; with the abstention gate on, sentences are held back until the
        gate has decided, so that no client is shown a claim the answer then withholds."""
        if self.abstain_below <= 0:
            yield from events
            return
        held: list[SentenceEvent] = []
        for event in events:
            if isinstance(event, SentenceEvent):
                held.append(event)
                continue
            if isinstance(event, DoneEvent) and not event.answer.withheld:
                yield from held
            yield event

    def _answer_events(
        self,
        question: str,
        hits: list[SearchHit],
        started: float,
        timings: dict[str, float],
        conversation: Conversation,
    ) -> Iterator[AnswerEvent]:
        turns = recent_turns(conversation.history or [], self.history_turns)
        usage = conversation.usage
        sources = self._sources(question, hits, turns)
        yield SourcesEvent(sources, self.generator.name)
        no_answer = wording(self.language).no_answer
        if not sources:
            yield DoneEvent(self._answer(question, no_answer, [], sources, timings, usage))
            return
        unknown = self._unknown_words(question, sources)
        if unknown:
            # The question is about something the documents never mention: the nearest sources
            # are shown, and nothing is scored or generated.
            declined = self._answer(question, no_answer, [], sources, timings, usage)
            declined.unrelated, declined.unknown_words = True, unknown
            timings["total"] = _ms_since(started)
            yield DoneEvent(declined)
            return
        checker = CitationChecker(
            sources, self.embedder, question=question, judge=self.judge, judge_threshold=self.judge_threshold
        )
        match = checker.question_match(question)
        reads_evidence = self.reader in (EXTRACT_READER, EVIDENCE_READER)
        passages, answerable = self._evidence(question, checker) if reads_evidence else ([], 1.0)
        evidence_score = passages[0].score if passages else 0.0
        if match < self.relevance_floor or (
            reads_evidence and (not passages or answerable < self.evidence_floor)
        ):
            # Nothing retrieved answers the question: say so, show the nearest sources, and
            # spend no time generating an answer they could not support.
            declined = self._answer(question, no_answer, [], sources, timings, usage)
            declined.match, declined.unrelated = match, True
            declined.evidence_score, declined.answerability = evidence_score, answerable
            timings["total"] = _ms_since(started)
            yield DoneEvent(declined)
            return
        if self.reader == EXTRACT_READER:
            messages, params = [], self.generation  # the quote alone: nothing to generate
        elif passages:
            evidence = [(p.source + 1, sources[p.source], p.text(sources)) for p in passages]
            messages = build_evidence_messages(
                question, evidence, turns, conversation.instruction, self.language
            )
            params = replace(
                self.generation, max_tokens=min(self.generation.max_tokens, EVIDENCE_ANSWER_TOKENS)
            )
        else:
            messages = build_messages(question, sources, turns, conversation.instruction, self.language)
            params = self.generation
        sentences: list[AnswerSentence] = []
        pieces: list[str] = []
        written: set[str] = set()
        if self.notice:
            sentences.append(AnswerSentence(self.notice, [], False, [], False, is_claim=False))
            yield SentenceEvent(0, sentences[0])
        best_quote = None
        quoted = len(sentences)
        if passages:
            # The best passage, verbatim, goes before what the model adds (checked; a sentence
            # that only repeats the passage is dropped). Shown at once while the model reads
            # when every passage is from one document; otherwise held until the model's first
            # sentence, and left out if that rests on other documents only.
            best = passages[0]
            best_quote = checker.quoted(best.source, best.start, best.end, best.score)
            _repeats(best_quote.text, written)
            if len({sources[p.source].document_id for p in passages}) == 1 or not messages:
                sentences.append(best_quote)
                yield SentenceEvent(len(sentences) - 1, best_quote)
                quoted, best_quote = len(sentences), None
        if messages:
            generator = MeteredGenerator(self.generator, usage, ANSWER_STEP)
            generated: list[AnswerSentence] = []
            events = self._generate(
                generator, messages, params, checker, started, timings, generated, pieces, written
            )
            yield from _with_quote(events, best_quote, sentences, checker.corroborates)
        quote = None if passages else self._quote_instead(checker, question, sentences)
        if quote is not None:
            sentences.append(quote)
            yield SentenceEvent(len(sentences) - 1, quote)
        timings["total"] = _ms_since(started)
        answer = self._answer(question, "".join(pieces), sentences, sources, timings, usage)
        from_model = [sentence for sentence in sentences[quoted:] if sentence is not best_quote]
        answer.extracted = quote is not None or (bool(passages) and not any(s.supported for s in from_model))
        written_tokens = usage.step(ANSWER_STEP)
        answer.match, answer.evidence_score = match, evidence_score
        answer.truncated = bool(messages) and written_tokens.completion >= params.max_tokens
        answer.answerability = answerable
        answer.relevance = checker.question_relevance(question, answer.citations)
        if answer.citations and answer.relevance < self.abstain_below:
            answer.withheld = True
            answer.text = no_answer
        if self.related_questions:
            answer.related_questions = self._related(question, answer, usage)
            timings["related"] = _ms_since(started)
        yield DoneEvent(answer)

    def _unknown_words(self, question: str, sources: Sequence[SearchHit]) -> list[str]:
        """The words naming something in `question` that neither the indexed documents nor the
        given sources hold. Capitalised words count as names in English questions only (German
        capitalises every noun)."""
        if not self.decline_unknown:
            return []
        words = named_words(question, names=self.language == ENGLISH)
        if not words:
            return []
        shown = " ".join(f"{hit.title} {' '.join(hit.heading_path)} {hit.text}" for hit in sources).lower()
        missing = [word for word in words if word.lower() not in shown]
        return self.retriever.unknown_words(missing) if missing else []

    def _sources(self, question: str, hits: list[SearchHit], turns: Sequence[Message]) -> list[SearchHit]:
        """The hits shown as sources: all of them for the evidence reader, which reads only the
        passages it selects; for the sources reader, those that fit the model's window."""
        if not hits or self.reader == EVIDENCE_READER:
            return hits
        budget = self.source_budget() - sum(self.generator.count_tokens(m.content) + 8 for m in turns)
        return pack_sources(hits, question, self.generator.count_tokens, budget)

    def _evidence(self, question: str, checker: CitationChecker) -> tuple[list[Passage], float]:
        """The passages of the sources most likely to answer `question`, best first, and how
        likely it is that one of the sources answers at all."""
        spans = checker.sentence_spans()
        texts = [checker.sources[s.source].text[s.start : s.end] for s in spans]
        scores = score_sentences(question, spans, checker.question_vector, texts)
        passages = select_passages(
            checker.sources, spans, scores, self.generator.count_tokens, self.evidence_tokens
        )
        return passages, answerability(question, spans, texts)

    def _generate(
        self,
        generator: Generator,
        messages: list[Message],
        params: GenerationParams,
        checker: CitationChecker,
        started: float,
        timings: dict[str, float],
        sentences: list[AnswerSentence],
        pieces: list[str],
        written: set[str],
    ) -> Iterator[AnswerEvent]:
        """Stream the model's reply, checking each sentence as soon as it is complete."""
        assembler = SentenceAssembler()
        repeated = False
        generating = time.time_ns()
        stream = generator.stream(messages, params)
        try:
            for piece in stream:
                if not pieces:
                    timings["first_token"] = _ms_since(started)
                pieces.append(piece)
                yield TokenEvent(piece)
                for text in assembler.feed(piece):
                    if _repeats(text, written):
                        repeated = True  # a model caught in a loop: what follows would repeat too
                        break
                    sentences.append(checker.check(text))
                    yield SentenceEvent(len(sentences) - 1, sentences[-1])
                if repeated:
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        verifying = time.time_ns()
        tracing.record("generate", generating, verifying, model=generator.name, pieces=len(pieces))
        for text in [] if repeated else assembler.finish():
            if _repeats(text, written):
                continue
            sentences.append(checker.check(text))
            yield SentenceEvent(len(sentences) - 1, sentences[-1])
        tracing.record("verify", verifying, time.time_ns(), sentences=len(sentences))

    def _quote_instead(
        self, checker: CitationChecker, question: str, sentences: Sequence[AnswerSentence]
    ) -> AnswerSentence | None:
        """The source sentence best matching the question, when nothing the model wrote is
        supported (and it did not say the documents lack the answer) and the match is good enough."""
        if not self.extract_fallback or any(s.citations or is_no_answer(s.text) for s in sentences):
            return None
        quote = checker.extract(question)
        if quote is None or not quote.citations:
            return None
        return quote if checker.question_relevance(question, quote.citations) >= self.quote_above else None

    def _related(self, question: str, answer: Answer, usage: TokenUsage) -> list[str]:
        """Follow-ups from the sources the answer cites, then from the others in rank order."""
        cited = list(dict.fromkeys(citation.number for citation in answer.citations))
        rest = [n for n in range(1, len(answer.sources) + 1) if n not in cited]
        sources = [answer.sources[n - 1] for n in [*cited, *rest]]
        generator = MeteredGenerator(self.generator, usage, RELATED_STEP)
        return suggest_related(generator, question, sources, self.generation)

    def ask_sources(self, question: str, hits: Sequence[SearchHit]) -> Answer:
        return _final(self.stream_sources(question, hits))

    def ask(self, question: str, history: Sequence[Message] | None = None) -> Answer:
        return _final(self.stream(question, history))

    def _answer(
        self,
        question: str,
        raw: str,
        sentences: list[AnswerSentence],
        sources: list[SearchHit],
        timings: dict[str, float],
        usage: TokenUsage,
    ) -> Answer:
        text = render_markdown(sentences) if sentences else raw
        return Answer(question, text, raw, sentences, sources, self.generator.name, timings, usage=usage)


def check_question(question: str) -> str:
    """The question stripped, or a QueryError saying how to fix it."""
    question = question.strip()
    if not question:
        raise QueryError("the question is empty; ask something about your documents")
    if len(question) > MAX_QUESTION_CHARS:
        raise QueryError(
            f"the question is {len(question):,} characters long; keep it under {MAX_QUESTION_CHARS:,}"
        )
    return question


def _with_quote(
    events: Iterator[AnswerEvent],
    quote: AnswerSentence | None,
    sentences: list[AnswerSentence],
    corroborates: Callable[[AnswerSentence, AnswerSentence], bool],
) -> Iterator[AnswerEvent]:
    """The model's events, its sentences numbered on after `sentences` (to which they are added),
    with `quote` held until the model's first sentence is checked. The quote goes before that
    sentence unless the sentence is supported by other sources only and the quote does not hold
    its answer (`corroborates(quote, sentence)`): a passage the answer does not rest on would put
    a footnote beside the point. With no sentence from the model, the quote is the answer."""
    pending = quote
    for event in events:
        if not isinstance(event, SentenceEvent):
            yield event
            continue
        if pending is not None and (
            not _rests_elsewhere(event.sentence, pending) or corroborates(pending, event.sentence)
        ):
            sentences.append(pending)
            yield SentenceEvent(len(sentences) - 1, pending)
        pending = None
        sentences.append(event.sentence)
        yield SentenceEvent(len(sentences) - 1, event.sentence)
    if pending is not None:
        sentences.append(pending)
        yield SentenceEvent(len(sentences) - 1, pending)


def _rests_elsewhere(sentence: AnswerSentence, quote: AnswerSentence) -> bool:
    """Whether a supported `sentence` cites no document that `quote` cites."""
    quoted = {citation.document_id for citation in quote.citations}
    cited = {citation.document_id for citation in sentence.citations}
    return sentence.supported and bool(cited) and not cited & quoted


def _repeats(sentence: str, written: set[str]) -> bool:
    """Whether `sentence` repeats one already in `written` (markers, list numbers, case and
    punctuation aside); otherwise it is added."""
    text, _ = strip_markers(sentence)
    key = " ".join(_WORDS.findall(_LIST_NUMBER.sub("", text).lower()))
    if key in written:
        return True
    if key:
        written.add(key)
    return False


def _final(events: Iterator[AnswerEvent]) -> Answer:
    for event in events:
        if isinstance(event, DoneEvent):
            return event.answer
    raise AssertionError("the answer stream ended without a DoneEvent")


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
