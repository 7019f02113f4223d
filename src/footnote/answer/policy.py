"""The answer policy: every knob that decides how a question is answered, in one frozen value.

An engine is built from a policy and never changed after; code that needs another policy (an
evaluation with every gate off) builds another engine from `dataclasses.replace(policy, ...)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from footnote.config.settings import Settings
from footnote.models.base import GenerationParams
from footnote.retrieval.retriever import RetrievalParams

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
# few selected passages and add a short checked answer; "extract" quotes the passage alone and
# generates nothing; "sources" has the model read whole chunks (for large models).
EXTRACT_READER = "extract"
EVIDENCE_READER = "evidence"
SOURCES_READER = "sources"
READERS = (EXTRACT_READER, EVIDENCE_READER, SOURCES_READER)
# One short answer sentence needs few tokens; the limit also bounds a model that rambles.
EVIDENCE_ANSWER_TOKENS = 48
# The model is stopped once it has written this many sentences beside the quoted passage: on
# RGB en_fact (reading) one cost answers whose second sentence held the answer (correct 0.63,
# two 0.64), while on docqa-dev the whole answer took 1.60 s and 1.65 s at the median.
EVIDENCE_ANSWER_SENTENCES = 2
# The floors a user tunes default to the settings' values (calibrated there), so an engine
# built directly behaves as the application's does.
RELEVANCE_FLOOR: float = Settings.model_fields["relevance_floor"].default
EVIDENCE_FLOOR: float = Settings.model_fields["evidence_floor"].default
READER_FLOOR: float = Settings.model_fields["reader_floor"].default
# So do the evidence reader's token budget, the turns of history kept and the judge's threshold.
EVIDENCE_TOKENS: int = Settings.model_fields["evidence_tokens"].default
HISTORY_TURNS: int = Settings.model_fields["history_turns"].default
JUDGE_THRESHOLD: float = Settings.model_fields["judge_threshold"].default
POINT_WORDS: int = Settings.model_fields["point_words"].default
POINT_WORDS_MOST: int = Settings.model_fields["point_words_most"].default
POINT_MARGIN: float = Settings.model_fields["point_margin"].default
ACROSS_LANGUAGE_FLOOR: float = Settings.model_fields["across_language_floor"].default
FOREIGN_SOURCES_FLOOR: float = Settings.model_fields["foreign_sources_floor"].default
ACROSS_LANGUAGE_SOURCES: int = Settings.model_fields["across_language_sources"].default


@dataclass(frozen=True)
class PointWords:
    """The words a broad answer's points take: `usual`, or as many as the sentences the reader
    scores within `margin` of its best hold, `most` at most (`answer.points.points_words`)."""

    usual: int = POINT_WORDS
    most: int = POINT_WORDS_MOST
    margin: float = POINT_MARGIN


@dataclass(frozen=True)
class AnswerPolicy:
    """How an engine answers: what it retrieves and generates, which reader reads the sources,
    and the gates (floors and thresholds) that decline or withhold an answer."""

    retrieval: RetrievalParams = field(default_factory=RetrievalParams)
    generation: GenerationParams = field(default_factory=GenerationParams)
    reader: str = EVIDENCE_READER
    evidence_tokens: int = EVIDENCE_TOKENS
    point_words: PointWords = field(default_factory=PointWords)
    # Gates before generating: sources that match the question less, or hold no answer-shaped
    # sentence, are taken as unrelated; so is a question naming a word no document holds.
    relevance_floor: float = RELEVANCE_FLOOR
    evidence_floor: float = EVIDENCE_FLOOR
    decline_unknown: bool = True
    reader_floor: float = READER_FLOOR  # the reader's best probability below which it declines
    # The multilingual embedder's best similarity below which it declines, where it reads instead.
    across_language_floor: float = ACROSS_LANGUAGE_FLOOR
    # The same for a question the sentence reader reads, over sources mostly in a language it does not.
    foreign_sources_floor: float = FOREIGN_SOURCES_FLOOR
    # Sources retrieved for a question it reads instead (0: as many as for any question).
    across_language_sources: int = ACROSS_LANGUAGE_SOURCES
    # Put such a question into English first, where the model answering its language is there.
    carry_questions: bool = True
    # Retell a carried question's answer in the question's language (`footnote.answer.retell`).
    retell_answers: bool = True
    # Gates after generating: withhold an answer whose citations match the question less; quote
    # the best-matching source sentence when nothing the model wrote is supported.
    abstain_below: float = ABSTAIN_BELOW
    quote_above: float = QUOTE_ABOVE
    extract_fallback: bool = True
    judge_threshold: float = JUDGE_THRESHOLD  # support probability a judged citation needs
    history_turns: int = HISTORY_TURNS
    related_questions: bool = False

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        retrieval: RetrievalParams,
        generation: GenerationParams | None = None,
        *,
        related_questions: bool = False,
        judged: bool = False,
    ) -> AnswerPolicy:
        """The policy the settings describe, retrieving with `retrieval` (the application's, from
        the same settings); a request may bring its own generation, and ask for related questions
        the settings leave off. `judged`: a support judge checks the citations."""
        s = settings
        return cls(
            retrieval=retrieval,
            generation=generation
            or GenerationParams(
                max_tokens=s.answer_tokens,
                temperature=s.temperature,
                seed=s.seed,
                repeat_penalty=s.repeat_penalty,
            ),
            reader=s.reader,
            evidence_tokens=s.evidence_tokens,
            point_words=PointWords(s.point_words, s.point_words_most, s.point_margin),
            relevance_floor=s.relevance_floor,
            evidence_floor=s.evidence_floor,
            decline_unknown=s.decline_unknown_names,
            reader_floor=s.reader_floor,
            across_language_floor=s.across_language_floor,
            foreign_sources_floor=s.foreign_sources_floor,
            across_language_sources=s.across_language_sources,
            carry_questions=s.carry_questions,
            retell_answers=s.retell_answers,
            abstain_below=s.abstain_below,
            quote_above=s.quote_above,
            # A judge is the authority on support: when it backs no sentence the answer abstains
            # rather than quote the source sentence that best matches the question.
            extract_fallback=not judged,
            judge_threshold=s.judge_threshold,
            history_turns=s.history_turns,
            related_questions=related_questions or s.related_questions,
        )

    @property
    def reads_evidence(self) -> bool:
        """Whether the reader selects evidence passages (extract and evidence readers)."""
        return self.reader in (EXTRACT_READER, EVIDENCE_READER)
