"""One answer, from its sources: the gates, the reader's prompt, the stream, the finished answer.

`Answering` is an engine as it answers a question in one language (`AnswerEngine.for_language`):
with the model that reads the language, that language's wording, and a notice said first when
no installed model reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TYPE_CHECKING

from footnote.answer import gates
from footnote.answer.across import across_languages
from footnote.answer.asks import answerability
from footnote.answer.budget import pack_sources
from footnote.answer.carry import carried_into_english
from footnote.answer.citations import AnswerSentence, CitationChecker, is_no_answer
from footnote.answer.evidence import (
    SECOND_QUOTE_SHARE,
    Answerable,
    Passage,
    answered_probability,
    reader_candidates,
    score_sentences,
    select_passages,
    with_reader,
    with_similarity,
)
from footnote.answer.history import Standalone, condense_question, leans_on_conversation, recent_turns
from footnote.answer.points import ScoredSentences, select_points
from footnote.answer.policy import (
    EVIDENCE_ANSWER_SENTENCES,
    EVIDENCE_ANSWER_TOKENS,
    EVIDENCE_READER,
    EXTRACT_READER,
)
from footnote.answer.prompt import build_evidence_messages, build_messages, wording
from footnote.answer.related import suggest_related
from footnote.answer.result import Answer, AnswerEvent, Asked, DoneEvent, SentenceEvent, SourcesEvent
from footnote.answer.retell import Retelling
from footnote.answer.streaming import Clock, Draft, generate_checked, with_quote
from footnote.answer.usage import (
    ANSWER_STEP,
    CARRY_STEP,
    CONDENSE_STEP,
    RELATED_STEP,
    RETELL_STEP,
    MeteredGenerator,
    TokenUsage,
)
from footnote.core.hits import SearchHit
from footnote.core.language import ENGLISH, UNKNOWN, reads
from footnote.core.sentences import is_line_item
from footnote.errors import QueryError
from footnote.models.base import Embedder, GenerationParams, Message
from footnote.models.registry import rewrites_follow_ups
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE
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


@dataclass(frozen=True)
class Prompt:
    """What the model is asked (no messages: the reader generates nothing) and with what limits."""

    messages: list[Message]
    params: GenerationParams
    sentences: int = 0  # the most sentences the model may write (0: no limit)


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

    def condense(
        self,
        question: str,
        history: Sequence[Message],
        usage: TokenUsage,
        search: Callable[[str], list[SearchHit]] | None = None,
    ) -> Standalone:
        """`question` rewritten to stand alone after `history` (counted under "condense") when it
        leans on the conversation; as written when it does not. `search` finds a query's sources
        (the engine's own by default); a caller that searches again may hand in one that keeps
        what it found."""
        engine = self.engine
        question = check_question(question)
        policy = engine.policy
        turns = recent_turns(history, policy.history_turns)
        find = search or (lambda query: engine.retriever.search(query, policy.retrieval))

        def top_document(query: str) -> int | None:
            hits = find(query)
            return hits[0].document_id if hits else None

        if not turns or not leans_on_conversation(question, turns, top_document):
            return Standalone.as_written(question)
        generator = MeteredGenerator(engine.generator, usage, CONDENSE_STEP)
        rewrite = rewrites_follow_ups(engine.generator.name)
        return condense_question(
            generator, history, question, policy.generation, policy.history_turns, rewrite=rewrite
        )

    def carried(self, question: str, hits: Sequence[SearchHit], usage: TokenUsage) -> str | None:
        """`question` in English, put there by the model that answers its language (counted under
        "carry"), when the sentence reader does not read the question but reads English and most
        of `hits` are not in the question's language: English ones, or none found, its words
        meeting none of the documents' (`footnote.answer.carry`). None otherwise, or when the
        model's reply is not one English question."""
        engine = self.engine
        reader = engine.support.reader
        if (
            not engine.policy.carry_questions
            or self.notice  # no model here reads the question
            or reader is None
            or reads(reader.languages, self.language)
            or not reads(reader.languages, ENGLISH)
        ):
            return None
        if hits and 2 * sum(hit.language == self.language for hit in hits) >= len(hits):
            return None
        return carried_into_english(MeteredGenerator(engine.generator, usage, CARRY_STEP), question)

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
            self._evidence(question, checker, in_context or question, prose=broad)
            if policy.reads_evidence
            else ([], Answerable(), None)
        )
        # Embeds the sources' sentences: asked for only where the gate decides on it, and once.
        match = cache(partial(checker.question_match, question))
        declined = gates.unrelated_sources(asked, policy, match, passages, answerable, clock)
        if declined is not None:
            yield DoneEvent(declined)
            return
        points = (
            select_points(sources, scored, policy.point_words)
            if broad and scored is not None and scored.spans
            else []
        )
        written = Written()
        if points:
            # A question that needs several passages is answered with them, quoted: nothing is
            # generated that the check could not support.
            passages, prompt = points, Prompt([], policy.generation)
            yield from self._quote_points(checker, points, written)
        else:
            # A retold answer's own sentences are the retelling's, in the asker's language.
            prompt = (
                Prompt([], policy.generation)
                if self.retelling is not None
                else self._prompt(question, sources, passages, turns, conversation.instruction)
            )
            yield from self._write(question, checker, passages, prompt, clock, written, conversation.usage)
        if self.retelling is not None:
            yield from self._retold(self.retelling, checker, written, conversation.usage)
        clock.mark("total")
        answer = self._finished(asked, checker, written, passages, prompt, (match(), answerable))
        if policy.related_questions:
            answer = replace(answer, related_questions=self._related(question, answer, conversation.usage))
            clock.mark("related")
        withheld = gates.unmatched_citations(answer, policy, no_answer)
        yield DoneEvent(answer if withheld is None else withheld)

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
        if not self.engine.policy.decline_unknown or self._across(sources) is not None:
            return []
        indexed = self.engine.retriever.unknown_words
        return gates.unknown_words(question, sources, indexed, english=self.language == ENGLISH)

    def _evidence(
        self, question: str, checker: CitationChecker, reader_question: str, prose: bool = False
    ) -> tuple[list[Passage], Answerable, ScoredSentences]:
        """The passages of the sources most likely to answer `question`, best first, how likely
        it is that one of the sources answers at all (only by sentences holding the kind of token
        it asks for; `prose`, a broad question's, is not held to code: its procedure may be told
        in words), and every sentence as it was read; the sentence reader reads
        `reader_question`."""
        reader = self.engine.support.reader
        across = self._across(checker.sources)
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
        scored = ScoredSentences(spans, texts, read or scores)
        coverage = answerability(question, spans, texts, prose)
        answerable = Answerable(coverage, best_read, similarity, question_read=question_read)
        return passages, answerable, scored

    def retrieval(self) -> RetrievalParams:
        """What a question in this language is retrieved with: more sources
        (`across_language_sources`) where the multilingual embedder may read them in the sentence
        reader's place, the question's words being unable to meet the documents' (broad-dev's
        Chinese questions hold their key points in the first 5 English chunks 0.50 of the time,
        in the first 10 0.75). `kept` cuts them back where it does not read them."""
        params = self.engine.policy.retrieval
        if not self._may_read_across():
            return params
        return replace(params, limit=max(params.limit, self.engine.policy.across_language_sources))

    def kept(self, hits: list[SearchHit]) -> list[SearchHit]:
        """The hits an answer reads: the usual number of them unless the multilingual embedder
        reads them (most of them in another language than the question)."""
        limit = self.engine.policy.retrieval.limit
        return hits if len(hits) <= limit or self._across(hits) is not None else hits[:limit]

    def _may_read_across(self) -> bool:
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

    def _across(self, sources: Sequence[SearchHit]) -> Embedder | None:
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
