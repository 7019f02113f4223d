"""One answer, from its sources: the gates, the reader's prompt, the stream, the finished answer.

`Answering` is an engine as it answers a question in one language (`AnswerEngine.for_language`):
with the model that reads the language, that language's wording, and a notice said first when
no installed model reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TYPE_CHECKING

from footnote.answer import gates
from footnote.answer.budget import pack_sources
from footnote.answer.carry import carried_question
from footnote.answer.citations import AnswerSentence, CitationChecker, is_no_answer
from footnote.answer.evidence import (
    SECOND_QUOTE_SHARE,
    Answerable,
    Passage,
)
from footnote.answer.history import Standalone, recent_turns, standalone_question
from footnote.answer.points import ScoredSentences, points_words, select_points
from footnote.answer.policy import (
    EVIDENCE_ANSWER_SENTENCES,
    EVIDENCE_ANSWER_TOKENS,
    EVIDENCE_READER,
    EXTRACT_READER,
)
from footnote.answer.prompt import Prompt, build_evidence_messages, build_messages, wording
from footnote.answer.reading import Reading
from footnote.answer.related import suggest_related
from footnote.answer.result import Answer, AnswerEvent, Asked, DoneEvent, SentenceEvent, SourcesEvent
from footnote.answer.retell import Retelling
from footnote.answer.streaming import Clock, Draft, generate_checked, with_quote
from footnote.answer.usage import (
    ANSWER_STEP,
    RELATED_STEP,
    RETELL_STEP,
    MeteredGenerator,
    TokenUsage,
)
from footnote.core.hits import SearchHit
from footnote.core.language import ENGLISH
from footnote.core.sentences import is_line_item
from footnote.errors import QueryError
from footnote.models.base import Message
from footnote.retrieval.retriever import RetrievalParams

if TYPE_CHECKING:
    from footnote.answer.engine import AnswerEngine

MAX_QUESTION_CHARS = 4000


@dataclass(frozen=True)
class Conversation:
    """What an answer knows besides its question: the earlier turns, the client's own
    instruction, and where the tokens of its model calls are counted."""

    history: Sequence[Message] | None
    instruction: str
    usage: TokenUsage


@dataclass
class Written:
    """What the answer says, as it is written: its checked sentences and the model's pieces."""

    sentences: list[AnswerSentence] = field(default_factory=list)
    draft: Draft = field(default_factory=Draft)
    lead: int = 0  # sentences said before the model's own: the notice, a quote shown at once
    held_quotes: list[AnswerSentence] = field(default_factory=list)  # held for the model's first sentence
    fallback: AnswerSentence | None = None  # a source sentence quoted for an unsupported answer


@dataclass(frozen=True)
class Answering:
    """An engine as it answers in `language` (its generator and reader chosen for it)."""

    engine: AnswerEngine
    language: str = ENGLISH  # the prompt's and the refusal's
    notice: str = ""  # said first when no model reads the question's language
    # A carried question's answer, retold in the language it was asked in after the quotes.
    retelling: Retelling | None = None

    @property
    def reading(self) -> Reading:
        """How this answer reads its sources: which of them, and by which model."""
        return Reading(self.engine, self.language)

    def retrieval(self) -> RetrievalParams:
        """What a question in this language is retrieved with (`Reading.retrieval`)."""
        return self.reading.retrieval()

    def kept(self, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits an answer reads (`Reading.kept`)."""
        return self.reading.kept(hits)

    def condense(
        self,
        question: str,
        history: Sequence[Message],
        usage: TokenUsage,
        search: Callable[[str], list[SearchHit]] | None = None,
    ) -> Standalone:
        """`question` made to stand alone after `history` (`history.standalone_question`)."""
        return standalone_question(self.engine, check_question(question), history, usage, search)

    def carried(self, question: str, hits: Sequence[SearchHit], usage: TokenUsage) -> str | None:
        """`question` in English where it is carried there (`carry.carried_question`)."""
        if self.notice:  # no model here reads the question
            return None
        return carried_question(self.engine, self.language, question, hits, usage)

    def events(
        self,
        question: str,
        hits: list[SearchHit],
        clock: Clock,
        conversation: Conversation,
        in_context: str = "",
    ) -> Iterator[AnswerEvent]:
        """The answer's events from `hits`: each gate may finish it early; otherwise the reader's
        prompt is answered, checked sentence by sentence, and the last gate applied. The sentence
        reader reads `in_context` when given: a follow-up with the question before it, which
        names what the follow-up leaves out ("What is its default?")."""
        engine, policy = self.engine, self.engine.policy
        turns = recent_turns(conversation.history or [], policy.history_turns)
        sources = self._sources(question, hits, turns)
        yield SourcesEvent(sources, engine.generator.name)
        no_answer = wording(self.language).no_answer
        asked = Asked(question, sources, engine.generator.name, no_answer, clock.timings, conversation.usage)
        declined = gates.without_sources(asked)
        if declined is None:
            declined = gates.naming_unknown_words(asked, self._unknown_words(question, sources), clock)
        if declined is not None:
            yield DoneEvent(declined)
            return
        checker = engine.support.checker(sources, question, policy.judge_threshold)
        broad = self._needs_points(question)
        passages, answerable, scored = (
            self.reading.evidence(question, checker, in_context or question, prose=broad)
            if policy.reads_evidence
            else ([], Answerable(), None)
        )
        # Embeds the sources' sentences: asked for only where the gate decides on it, and once.
        match = cache(partial(checker.question_match, question))
        declined = gates.unrelated_sources(asked, policy, match, passages, answerable, clock)
        if declined is not None:
            yield DoneEvent(declined)
            return
        written = Written()
        passages, prompt = yield from self._compose(
            question, checker, passages, scored if broad else None, turns, conversation, clock, written
        )
        if self.retelling is not None:
            yield from self._retold(self.retelling, checker, written, conversation.usage)
        clock.mark("total")
        answer = self._finished(asked, checker, written, passages, prompt, (match(), answerable))
        if policy.related_questions:
            answer = replace(answer, related_questions=self._related(question, answer, conversation.usage))
            clock.mark("related")
        withheld = gates.unmatched_citations(answer, policy, no_answer)
        yield DoneEvent(answer if withheld is None else withheld)

    def _compose(
        self,
        question: str,
        checker: CitationChecker,
        passages: list[Passage],
        scored: ScoredSentences | None,
        turns: Sequence[Message],
        conversation: Conversation,
        clock: Clock,
        written: Written,
    ) -> Generator[AnswerEvent, None, tuple[list[Passage], Prompt]]:
        """The answer's body, into `written`: the points of a broad question's sentences as read
        (`scored`), quoted; else what the model writes from `passages`, checked. Returns the
        passages it stands on and the prompt it was written with."""
        policy = self.engine.policy
        points = []
        if scored and scored.spans:
            points = select_points(checker.sources, scored, points_words(scored, policy.point_words))
        if points:
            # A question that needs several passages is answered with them, quoted: nothing is
            # generated that the check could not support.
            yield from self._quote_points(checker, points, written)
            return points, Prompt([], policy.generation)
        # A retold answer's own sentences are the retelling's, in the asker's language.
        prompt = (
            Prompt([], policy.generation)
            if self.retelling is not None
            else self._prompt(question, checker.sources, passages, turns, conversation.instruction)
        )
        yield from self._write(question, checker, passages, prompt, clock, written, conversation.usage)
        return passages, prompt

    def _prompt(
        self,
        question: str,
        sources: list[SearchHit],
        passages: list[Passage],
        turns: Sequence[Message],
        instruction: str,
    ) -> Prompt:
        """The reader's prompt: none for the extract reader (the quote alone), the selected
        passages for the evidence reader (one short sentence), else the whole sources."""
        policy = self.engine.policy
        if policy.reader == EXTRACT_READER:
            return Prompt([], policy.generation)
        if passages:
            evidence = [(p.source + 1, sources[p.source], p.text(sources)) for p in passages]
            messages = build_evidence_messages(question, evidence, turns, instruction, self.language)
            max_tokens = min(policy.generation.max_tokens, EVIDENCE_ANSWER_TOKENS)
            params = replace(policy.generation, max_tokens=max_tokens)
            return Prompt(messages, params, EVIDENCE_ANSWER_SENTENCES)
        return Prompt(build_messages(question, sources, turns, instruction, self.language), policy.generation)

    def _write(
        self,
        question: str,
        checker: CitationChecker,
        passages: list[Passage],
        prompt: Prompt,
        clock: Clock,
        written: Written,
        usage: TokenUsage,
    ) -> Iterator[AnswerEvent]:
        """The notice, the best passage quoted verbatim and what the model writes, each sentence
        checked as it completes; without passages, a source sentence when the model's is unsupported."""
        sentences = written.sentences
        if self.notice:
            sentences.append(AnswerSentence(self.notice, [], False, [], False, is_claim=False))
            yield SentenceEvent(0, sentences[0])
        if passages:
            yield from self._lead_quote(checker, passages, prompt, written)
        written.lead = len(sentences)
        if prompt.messages:
            generator = MeteredGenerator(self.engine.generator, usage, ANSWER_STEP)
            draft, most = written.draft, prompt.sentences
            events = generate_checked(
                generator, prompt.messages, prompt.params, checker, clock, draft, [], most
            )
            yield from with_quote(events, written.held_quotes, sentences, checker.corroborates)
        quote = None if passages else self._quote_instead(checker, question, sentences)
        if quote is not None:
            written.fallback = quote
            sentences.append(quote)
            yield SentenceEvent(len(sentences) - 1, quote)

    def _retold(
        self, retelling: Retelling, checker: CitationChecker, written: Written, usage: TokenUsage
    ) -> Iterator[AnswerEvent]:
        """The quotes shown, retold in the asker's language: each supported sentence shown after
        them, each unsupported one kept for inspection only (`flagged`)."""
        quotes = [sentence for sentence in written.sentences if sentence.citations]
        if not quotes:
            return
        metered = replace(retelling, generator=MeteredGenerator(retelling.generator, usage, RETELL_STEP))
        for sentence in metered.sentences(quotes, checker):
            written.sentences.append(sentence)
            if not sentence.flagged:
                yield SentenceEvent(len(written.sentences) - 1, sentence)

    def _needs_points(self, question: str) -> bool:
        """Whether `question` is answered with several passages (`AnswerEngine.shape`): never
        where the shape is not read (broad answers off), nor by the sources reader, which reads no
        sentences to choose from."""
        shape = self.engine.shape
        if shape is None or not self.engine.policy.reads_evidence:
            return False
        return shape.needs_points(question)

    def _quote_points(
        self, checker: CitationChecker, points: list[Passage], written: Written
    ) -> Iterator[AnswerEvent]:
        """Each point verbatim, in order, after the notice (if any) and as soon as it is chosen;
        several points are shown as a list (a point that is already a list item stays as it is),
        while each footnote still quotes the document's own text."""
        if self.notice:
            written.sentences.append(AnswerSentence(self.notice, [], False, [], False, is_claim=False))
            yield SentenceEvent(0, written.sentences[0])
        for point in points:
            quote = checker.quoted(point.source, point.start, point.end, point.score)
            if len(points) > 1 and not is_line_item(quote.text):
                quote = replace(quote, text=f"- {quote.text}")
            written.sentences.append(quote)
            yield SentenceEvent(len(written.sentences) - 1, written.sentences[-1])
        written.lead = len(written.sentences)

    def _lead_quote(
        self, checker: CitationChecker, passages: list[Passage], prompt: Prompt, written: Written
    ) -> Iterator[AnswerEvent]:
        """The best passage, verbatim, goes before what the model adds (checked; a sentence that
        only repeats the passage is dropped), and the next best beside it when it comes from the
        same document and scores nearly as well (`SECOND_QUOTE_SHARE`). Shown at once while the
        model reads when every passage is from one document; otherwise held until the model's
        first sentence, and each left out if that rests on other documents only."""
        best = passages[0]
        document = checker.sources[best.source].document_id
        second = [
            p
            for p in passages[1:2]
            if p.score >= SECOND_QUOTE_SHARE * best.score
            and checker.sources[p.source].document_id == document
        ]
        quotes = []
        for passage in [best, *second]:
            quote = checker.quoted(passage.source, passage.start, passage.end, passage.score)
            if not written.draft.repeats(quote.text):
                quotes.append(quote)
        if len({checker.sources[p.source].document_id for p in passages}) == 1 or not prompt.messages:
            for quote in quotes:
                written.sentences.append(quote)
                yield SentenceEvent(len(written.sentences) - 1, quote)
        else:
            written.held_quotes = quotes

    def _finished(
        self,
        asked: Asked,
        checker: CitationChecker,
        written: Written,
        passages: list[Passage],
        prompt: Prompt,
        scores: tuple[float, Answerable],
    ) -> Answer:
        """The written answer with its scores: `scores` are the sources' match with the question
        and their answerability."""
        sentences = written.sentences
        from_model = [s for s in sentences[written.lead :] if all(s is not q for q in written.held_quotes)]
        citations = [citation for sentence in sentences for citation in sentence.citations]
        match, answerable = scores
        return asked.answer(
            "".join(written.draft.pieces),
            sentences,
            relevance=checker.question_relevance(asked.question, citations),
            extracted=written.fallback is not None
            or (bool(passages) and not any(s.supported for s in from_model)),
            match=match,
            evidence_score=passages[0].score if passages else 0.0,
            answerability=answerable.value,
            truncated=bool(prompt.messages)
            and asked.usage.step(ANSWER_STEP).completion >= prompt.params.max_tokens,
        )

    def _sources(self, question: str, hits: list[SearchHit], turns: Sequence[Message]) -> list[SearchHit]:
        """The hits shown as sources: all of them for the evidence reader, which reads only the
        passages it selects; for the sources reader, those that fit the model's window."""
        engine = self.engine
        if not hits or engine.policy.reader == EVIDENCE_READER:
            return hits
        budget = engine.source_budget() - sum(engine.generator.count_tokens(m.content) + 8 for m in turns)
        return pack_sources(hits, question, engine.generator.count_tokens, budget)

    def _unknown_words(self, question: str, sources: Sequence[SearchHit]) -> list[str]:
        """The named words of `question` no document holds, when the policy declines on them; none
        where the sources are read across languages (the question's words cannot meet theirs)."""
        if not self.engine.policy.decline_unknown or self.reading.across(sources) is not None:
            return []
        indexed = self.engine.retriever.unknown_words
        return gates.unknown_words(question, sources, indexed, english=self.language == ENGLISH)

    def _quote_instead(
        self, checker: CitationChecker, question: str, sentences: Sequence[AnswerSentence]
    ) -> AnswerSentence | None:
        """The source sentence best matching the question, when nothing the model wrote is
        supported (and it did not say the documents lack the answer) and the match is good enough."""
        policy = self.engine.policy
        if not policy.extract_fallback or any(s.citations or is_no_answer(s.text) for s in sentences):
            return None
        quote = checker.extract(question)
        if quote is None or not quote.citations:
            return None
        return quote if checker.question_relevance(question, quote.citations) >= policy.quote_above else None

    def _related(self, question: str, answer: Answer, usage: TokenUsage) -> list[str]:
        """Follow-ups from the sources the answer cites, then from the others in rank order."""
        cited = list(dict.fromkeys(citation.number for citation in answer.citations))
        rest = [n for n in range(1, len(answer.sources) + 1) if n not in cited]
        sources = [answer.sources[n - 1] for n in [*cited, *rest]]
        generator = MeteredGenerator(self.engine.generator, usage, RELATED_STEP)
        return suggest_related(generator, question, sources, self.engine.policy.generation)


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
