"""Evidence selection: the few source passages most likely to answer, before any generation.

A small model reading five whole chunks is slow (every prompt token is prefill time) and
easily distracted by them. So the sentences of the retrieved chunks are scored against the
question first, and the model is shown only the best few, each grown by the sentences just
before and after it within its paragraph, within a small token budget.

A sentence's score blends four signals measured on the question:
- keyword: the IDF-weighted share of the question's terms the sentence contains, IDF taken
  over the retrieved sentences themselves; terms only its lead-in holds count at a discount
  (the three sentences before it in its paragraph, and the paragraph's first line: a man
  page's option line, a table's header row);
- dense: the cosine between sentence and question embeddings;
- rank: the retrieval rank of its chunk;
- agreement: the share of the other sources that also hold one of its candidate answer values;
and then adjusts it for what an answer looks like: a sentence that holds a token of the kind
the question asks for (a number for "how many", an option or identifier for "which flag", a
name for "who") that the question does not already contain scores more; one that adds no term
beyond the question, or is itself a question (an FAQ's heading), scores less.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from footnote.answer.policy import EVIDENCE_TOKENS
from footnote.answer.terms import content_terms
from footnote.core.hits import SearchHit
from footnote.core.sentences import split_sentences
from footnote.core.stopwords import CLAIM_STOP_WORDS
from footnote.core.vectors import closeness
from footnote.models.base import Vector
from footnote.models.sentence_reader import reader_input

# Weights of the signals and of the lead-in's terms, chosen by a grid search on docqa-dev; what
# they give is measured by `benchmarks/evidence_selection.py` (saved under benchmarks/results/).
# Cross-validated by document (`benchmarks/evidence_model.py`), the same grid search gives
# passage@1 0.525 (0.575 in sample, 0.5625 for these weights), and learned listwise blends, of
# these signals or of nine more, do no better (0.525 and 0.5125): the weights stay hand-set.
KEYWORD_WEIGHT = 0.4
DENSE_WEIGHT = 0.2
RANK_WEIGHT = 0.2
CONTEXT_DISCOUNT = 0.7
CONTEXT_SENTENCES = 3
TYPED_BONUS = 0.3
# RGB en_fact reading: citation precision 0.659 with it, 0.619 without; docqa-dev unchanged
# (benchmarks/results/answers_*-agreement-20261203.json against *-default-rule-20261203.json).
AGREEMENT_WEIGHT = 0.1
# Two discounts, of sentences that only restate the question's terms and of sentences that are
# questions, were taken out together: beside the reader they moved passage@1 0.60 -> 0.5875 on
# docqa-dev and not at all on squad2-dev (0.8673; benchmarks/evidence_ablation.py --together).
# The sentence reader reads every sentence of the retrieved chunks and its probability joins their
# scores at READER_WEIGHT. Both docqa-dev and squad2-dev put the answer in the quoted passage more
# often at every weight from 0.1 to 3; 0.5 is the best weight in sample on docqa-dev and within
# 0.006 of it on squad2-dev (docs/benchmarks.md, "The sentence reader").
READER_WEIGHT = 0.5
# Where the reader reads, embedding similarity joins the scores of its best sentences only (the
# others are embedded after the quote is shown): end to end it quoted the answer as often on
# docqa-dev and more often on squad2-dev and RGB than without it (docs/benchmarks.md).
SIMILAR_SENTENCES = 12
# Passages shown to the model (the tokens they may take in all are the policy's).
DEFAULT_PASSAGES = 3
# The second passage is quoted beside the first when it is from the same document and scores at
# least this share of the first's. Over the engine's passages (benchmarks/second_passage.py), the
# quotes hold the answer for docqa-dev 0.60 with one, 0.6375 / 0.70 / 0.7125 at shares 0.9 / 0.8 /
# 0.7 (a second quote in 31% / 64% / 73% of answers), for squad2-dev 0.867, 0.908 / 0.908 / 0.929
# (13% / 26% / 41%): below 0.8 more second quotes add little. From other documents they cited
# RGB's noise passages (citation precision 0.649 -> 0.581), so those are never quoted second.
SECOND_QUOTE_SHARE = 0.8
# A passage is its best sentence with the one before and the one after, within its block, where they
# fit. Text laid out in lines (a manual, a list, a table, a hard-wrapped file) grows by a sentence
# each way again while it fits: there a value often sits a line or two below the sentence that
# describes it (an option's default, an exit status's meaning). Over the engine's passages
# (benchmarks/second_passage.py, second quotes at 0.8) the quotes hold docqa-dev's answer 0.70 ->
# 0.7375; squad2-dev's and RGB's paragraphs, one line each, are unchanged. Grown so for prose too,
# squad2-dev's best passage held an unanswerable question's distractor 0.672 -> 0.713.
MAX_PASSAGE_TOKENS = 160


_ASKS_YEAR = re.compile(r"\b(?:what|which) year\b|^\s*when (?:was|did|were)\b", re.IGNORECASE)
_ASKS_VERSION = re.compile(r"\b(?:what|which)(?: [\w.+-]+){0,3} (?:version|release)\b", re.IGNORECASE)
_ASKS_NUMBER = re.compile(
    r"\bhow (?:many|much|long|large|big|deep|far|old|often|precise|fast|wide|high|small)\b"
    r"|\b(?:size|number|percentage|port|limit|level|range|exit status|return code|width|length|timeout"
    r"|seconds|bytes|depth|rounds|count)\b"
    r"|\b(?:at most|at least|maximum|minimum|oldest|newest|highest|lowest|earliest|latest)\b",
    re.IGNORECASE,
)
_ASKS_CODE = re.compile(
    r"\b(?:option|flag|switch|command|function|macro|variable|setting|method|call|directive|keyword"
    r"|parameter|operator|delimiters?|syntax|action|type|argument|define|constant|extension|class|module)\b"
    r"|\bhow (?:do|can|would|should) (?:i|you|one)\b",
    re.IGNORECASE,
)
# "What does exit status 2 mean?" names its number and asks for words.
_ASKS_MEANING = re.compile(
    r"\bwhat (?:does|do|did)\b.*\b(?:mean|indicate|stand for|signify|do)\b|\bwhat went wrong\b", re.IGNORECASE
)
# "By default, how many…", "…unless -B is given", "…if AccuracySec= is left unset": the answer is
# a default, so only a passage that states one can hold it.
_ASKS_DEFAULT = re.compile(
    r"\b(?:by default|default|defaults|unless|out of the box|left unset)\b"
    r"|\b(?:is|are) not (?:given|set|specified)\b|\b(?:when|if) (?:no|none|not)\b",
    re.IGNORECASE,
)
_STATES_DEFAULT = re.compile(
    r"\b(?:default(?:s|ed)?|otherwise|unless|omitted|unset|implied|implicit(?:ly)?)\b"
    r"|\b(?:if|when) (?:not|no|none)\b",
    re.IGNORECASE,
)
_ASKS_NAME = re.compile(r"^\s*who\b|\bwhose\b|\bwho (?:wrote|created|made|invented)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:1[5-9]|20)\d\d\b")
_VERSION = re.compile(r"\d+\.\d+")
# A section or list number ("4.", "6.6.1.", "2)") starting a line says where, not what.
_SECTION_NUMBER = re.compile(r"^\(?\d+(?:\.\d+)*[.)]?$")
# An option, identifier, assignment, call, constant, path or quoted literal.
_CODE = re.compile(r"^[-+]{1,2}\w|\w_\w|\w=|\w\(|[a-z][A-Z]|^[A-Z][A-Z0-9]{2,}$|`|\w/\w|\w\.\w|^['\"<$]|%")
_STRIP = ".,;:()[]{}\"'\u2018\u2019\u201c\u201d"


def asked_kinds(question: str) -> frozenset[str]:
    """What kind of token an answer to `question` holds: "year", "version", "number", "code" and/or "name"."""
    kinds: set[str] = set()
    if _ASKS_MEANING.search(question):
        return frozenset()
    if _ASKS_YEAR.search(question):
        kinds.add("year")
    elif _ASKS_VERSION.search(question):
        kinds.add("version")
    elif _ASKS_NUMBER.search(question):
        kinds.add("number")
    if _ASKS_CODE.search(question):
        kinds.add("code")
    if _ASKS_NAME.search(question):
        kinds.add("name")
    return frozenset(kinds)


def holds_asked_token(sentence: str, question: str, kinds: frozenset[str]) -> bool:
    """Whether `sentence` holds a token of one of `kinds` that `question` does not contain."""
    return bool(asked_tokens(sentence, question, kinds))


def asked_tokens(sentence: str, question: str, kinds: frozenset[str]) -> set[str]:
    """The tokens of one of `kinds` in `sentence` that `question` does not contain, lower-cased:
    the values an answer to `question` could be."""
    asked = question.lower()
    found: set[str] = set()
    for position, raw in enumerate(sentence.split()):
        word = raw.strip(_STRIP) or raw
        if word.lower() in asked or (position == 0 and _SECTION_NUMBER.match(raw)):
            continue
        if (
            ("year" in kinds and _YEAR.search(word))
            or ("version" in kinds and _VERSION.search(word))
            or ("number" in kinds and any(c.isdecimal() for c in word))
            or ("code" in kinds and _CODE.search(raw.strip(".,;:")))
            or ("name" in kinds and word[:1].isupper() and word[1:].islower())
        ):
            found.add(word.lower())
    return found


def agreement(question: str, sources: Sequence[int], texts: Sequence[str]) -> list[float]:
    """Per sentence (of source `sources[i]`, text `texts[i]`): the largest share of the other
    sources that also hold one of its candidate answer values. Sources that agree on a value
    are likelier to state the answer than one that stands alone (news passages about the same
    event; a value a manual repeats in several sections)."""
    kinds = asked_kinds(question)
    return _agreement(sources, [asked_tokens(text, question, kinds) if kinds else set() for text in texts])


def _agreement(sources: Sequence[int], values: Sequence[set[str]]) -> list[float]:
    """`agreement` of sentences whose candidate values (`asked_tokens`) are already found."""
    others = len(set(sources)) - 1
    if others < 1:
        return [0.0] * len(values)
    # A capitalised function word ("However", "In") is no value, however many sources hold it.
    named = [found - CLAIM_STOP_WORDS for found in values]
    by_source: dict[int, set[str]] = {}
    for source, found in zip(sources, named, strict=True):
        by_source.setdefault(source, set()).update(found)
    shares = []
    for source, found in zip(sources, named, strict=True):
        held = (sum(value in seen for other, seen in by_source.items() if other != source) for value in found)
        shares.append(max(held, default=0) / others)
    return shares


@dataclass(frozen=True)
class SentenceSpan:
    """One sentence of one retrieved chunk, with what scoring needs to know of it."""

    source: int  # 0-based index into the hits
    position: int  # index of the sentence in its chunk
    start: int  # character span in the chunk text
    end: int
    terms: frozenset[str]
    vector: Vector | None = None
    paragraph: int = 0  # index of its paragraph in the chunk (blank lines separate paragraphs)
    block: int = 0  # index of its block: a paragraph with those indented deeper below it


def _has_blank_line(gap: str) -> bool:
    """Whether `gap` holds a line of nothing but spaces and tabs between two line breaks."""
    return any(not line.strip(" \t") for line in gap.split("\n")[1:-1])


def _indent(text: str, start: int, known: bool = True) -> int | None:
    """The spaces before `start` on its line; None where they are not known (a chunk that may
    begin inside a line) or the line holds other text before it."""
    line = text.rfind("\n", 0, start) + 1
    before = text[line:start]
    if not known or before.strip(" \t"):
        return None
    return len(before.expandtabs())


def sentence_spans(hits: Sequence[SearchHit]) -> list[SentenceSpan]:
    """Every sentence of every hit with its terms, paragraph and block, in order. A paragraph
    indented deeper than the one that began its block belongs to that block: a manual's option
    line and the description set in below it, an item and what is nested under it."""
    spans: list[SentenceSpan] = []
    for source, hit in enumerate(hits):
        paragraph, block, last_end, block_indent = 0, 0, 0, None
        for position, (start, end) in enumerate(split_sentences(hit.text)):
            if not position:
                block_indent = _indent(hit.text, start, hit.text[:1].isspace())
            elif _has_blank_line(hit.text[last_end:start]):
                paragraph += 1
                indent = _indent(hit.text, start)
                if block_indent is None or indent is None or indent <= block_indent:
                    block += 1
                    block_indent = indent
            terms = frozenset(content_terms(hit.text[start:end]))
            spans.append(SentenceSpan(source, position, start, end, terms, paragraph=paragraph, block=block))
            last_end = end
    return spans


@dataclass(frozen=True)
class Answerable:
    """How likely the sources are to answer: the coverage of the question by an answer-shaped
    sentence (`answerability`), the reader's probability that its best sentence answers (None
    when no reader read them), and the multilingual embedder's best similarity where it read them
    instead."""

    coverage: float = 1.0
    read: float | None = None
    # The multilingual embedder's best closeness of a sentence to the question, where it read
    # them in the reader's place (a question in a language the reader does not read, or sources
    # mostly in one it does not read).
    similarity: float | None = None
    # Whether the sentence reader reads the question itself (sources in another language): that
    # direction has a floor of its own, the similarities running lower.
    question_read: bool = False

    @property
    def value(self) -> float:
        """The coverage, times the reader's probability when it read the sources: apart, each
        tells answerable questions from the rest less well than together."""
        return self.coverage if self.read is None else self.read * self.coverage


@dataclass(frozen=True)
class Passage:
    """A run of sentences `[first, last]` of one chunk chosen as evidence, and its score."""

    source: int
    start: int  # character span in the chunk text
    end: int
    anchor: SentenceSpan  # the sentence that scored best
    score: float

    def text(self, hits: Sequence[SearchHit]) -> str:
        return hits[self.source].text[self.start : self.end]


def reader_candidates(
    hits: Sequence[SearchHit], sentences: Sequence[SentenceSpan], texts: Sequence[str]
) -> list[str]:
    """What the sentence reader reads of each sentence: the sentence, its document's title and
    heading path, and the first sentence of its paragraph when it is a later one."""
    first: dict[tuple[int, int], str] = {}
    for sentence, text in zip(sentences, texts, strict=True):
        first.setdefault((sentence.source, sentence.paragraph), text)
    candidates = []
    for sentence, text in zip(sentences, texts, strict=True):
        hit = hits[sentence.source]
        heading = " \u203a ".join(part for part in (hit.title, *hit.heading_path) if part)
        lead = first[(sentence.source, sentence.paragraph)]
        candidates.append(reader_input(text, heading, "" if lead is text else lead))
    return candidates


def reader_probability(logit: float) -> float:
    """The reader's logit as the probability that the sentence answers."""
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, logit))))


def answered_probability(read: Sequence[float], no_answer: float | None = None) -> float:
    """How surely the reader finds an answer among the sentences it read (`read`: their logits):
    its best sentence's probability; for a reader trained with the no-answer candidate
    (`no_answer`: that candidate's logit), the share the sentences take of a softmax over them
    and that candidate, which weighs each question's sentences against the question itself."""
    if no_answer is None:
        return reader_probability(max(read))
    total = sum(math.exp(max(-60.0, min(60.0, logit - no_answer))) for logit in read)
    return total / (1.0 + total)


def with_reader(scores: Sequence[float], read: Sequence[float], weight: float = READER_WEIGHT) -> list[float]:
    """The blend's `scores` plus `weight` times the reader's probability (`read`: its logit for
    each sentence, in order)."""
    return [score + weight * reader_probability(logit) for score, logit in zip(scores, read, strict=True)]


def with_similarity(
    scores: Sequence[float],
    texts: Sequence[str],
    question_vector: Vector,
    embed_many: Callable[[list[str]], list[Vector]],
    most: int = SIMILAR_SENTENCES,
) -> list[float]:
    """`scores` with the embedding similarity of the `most` best sentences to the question
    added at DENSE_WEIGHT, as the blend weighs it: only those are embedded before the quote."""
    best = sorted(range(len(scores)), key=lambda i: -scores[i])[:most]
    raised = list(scores)
    for index, vector in zip(best, embed_many([texts[i] for i in best]), strict=True):
        raised[index] += DENSE_WEIGHT * closeness(question_vector, vector)
    return raised


def score_sentences(
    question: str,
    sentences: Sequence[SentenceSpan],
    question_vector: Vector | None,
    texts: Sequence[str],
) -> list[float]:
    """The evidence score of each sentence (whose text is `texts[i]`) for `question`."""
    asked = content_terms(question)
    if not sentences:
        return []
    frequency: dict[str, int] = {}
    for sentence in sentences:
        for term in sentence.terms:
            if term in asked:
                frequency[term] = frequency.get(term, 0) + 1
    total = len(sentences)
    idf = {term: math.log(1.0 + total / frequency.get(term, 0.5)) * weight for term, weight in asked.items()}
    norm = sum(idf.values()) or 1.0
    by_position = {(s.source, s.position): s for s in sentences}
    ranks = sorted({s.source for s in sentences})
    kinds = asked_kinds(question)
    # The values a sentence could answer with: what earns the typed bonus and what sources agree on.
    values = [asked_tokens(text, question, kinds) if kinds else set() for text in texts]
    agreed = _agreement([s.source for s in sentences], values)
    scores: list[float] = []
    for sentence, found, shared in zip(sentences, values, agreed, strict=True):
        keyword = _covered(idf, sentence, _context(sentence, by_position))
        dense = 0.0
        if question_vector is not None and sentence.vector is not None:
            dense = closeness(question_vector, sentence.vector)
        rank = 1.0 / (1.0 + ranks.index(sentence.source))
        score = KEYWORD_WEIGHT * keyword / norm + DENSE_WEIGHT * dense + RANK_WEIGHT * rank
        score += AGREEMENT_WEIGHT * shared
        if found:
            score += TYPED_BONUS
        scores.append(score)
    return scores


def answerability(
    question: str, sentences: Sequence[SentenceSpan], texts: Sequence[str], prose: bool = False
) -> float:
    """How well the sources can answer `question`: the best of `coverages`."""
    if not content_terms(question):
        return 1.0
    return max(coverages(question, sentences, texts, prose), default=0.0)


def coverages(
    question: str, sentences: Sequence[SentenceSpan], texts: Sequence[str], prose: bool = False
) -> list[float]:
    """How well each sentence can answer `question`: the weighted share of its terms that the
    sentence (with its paragraph's lead-in) covers, if it holds a token of the kind asked for (any
    sentence when the question asks for no particular kind) and, for a question asking for a
    default, if it states one or stands beside one; else 0. `prose`: an answer that may be told
    in words (a broad question's: a procedure, a summary, a comparison) is not held to code,
    while a number, year, version or name it asks for must still be there."""
    asked = content_terms(question)
    total = sum(asked.values())
    if not total:
        return [1.0] * len(sentences)
    kinds = asked_kinds(question) - {"code"} if prose else asked_kinds(question)
    by_position = {(s.source, s.position): s for s in sentences}
    defaults = _stating_default(sentences, texts) if _ASKS_DEFAULT.search(question) else None
    covered = []
    for index, (sentence, text) in enumerate(zip(sentences, texts, strict=True)):
        if (kinds and not holds_asked_token(text, question, kinds)) or (
            defaults is not None and index not in defaults
        ):
            covered.append(0.0)
        else:
            covered.append(_covered(asked, sentence, _context(sentence, by_position)) / total)
    return covered


def _stating_default(sentences: Sequence[SentenceSpan], texts: Sequence[str]) -> set[int]:
    """The sentences that state a default, or sit next to one in their paragraph ("-B size …
    Larger buffers cost memory. The default is 32768 bytes.")."""
    stating = {i for i, text in enumerate(texts) if _STATES_DEFAULT.search(text)}
    near = set(stating)
    for i in stating:
        for j in (i - 1, i + 1):
            beside = 0 <= j < len(sentences) and sentences[j].source == sentences[i].source
            if beside and sentences[j].paragraph == sentences[i].paragraph:
                near.add(j)
    return near


def _covered(
    weights: dict[str, float], sentence: SentenceSpan, context: list[tuple[frozenset[str], float]]
) -> float:
    """The weight of the terms `sentence` holds, and of those only its context holds, discounted."""
    covered = 0.0
    for term, weight in weights.items():
        if term in sentence.terms:
            covered += weight
        else:
            covered += weight * max((discount for terms, discount in context if term in terms), default=0.0)
    return covered


def _context(
    sentence: SentenceSpan, by_position: dict[tuple[int, int], SentenceSpan]
) -> list[tuple[frozenset[str], float]]:
    """The terms of the sentences before `sentence` in its paragraph, each with its discount:
    an option's description names the option once, and its default comes sentences later."""
    context = []
    weight = CONTEXT_DISCOUNT
    back = 1
    while True:
        before = by_position.get((sentence.source, sentence.position - back))
        if before is None or before.paragraph != sentence.paragraph:
            break
        if back <= CONTEXT_SENTENCES:
            context.append((before.terms, weight))
            weight *= CONTEXT_DISCOUNT
        lead = before
        back += 1
    if back > CONTEXT_SENTENCES + 1:
        # The paragraph's first line leads every later one: a table's header, an option's name.
        context.append((lead.terms, CONTEXT_DISCOUNT**2))
    return context


def select_passages(
    hits: Sequence[SearchHit],
    sentences: Sequence[SentenceSpan],
    scores: Sequence[float],
    count_tokens: Callable[[str], int],
    budget_tokens: int = EVIDENCE_TOKENS,
    passages: int = DEFAULT_PASSAGES,
) -> list[Passage]:
    """The best sentences grown into passages (sentences before and after, in turn, while they fit),
    non-overlapping, best first, within `budget_tokens` in all."""
    by_chunk: dict[int, list[SentenceSpan]] = {}
    for sentence in sentences:
        by_chunk.setdefault(sentence.source, []).append(sentence)
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], sentences[i].source, i))
    chosen: list[Passage] = []
    used_tokens = 0
    taken: set[tuple[int, int]] = set()
    for index in order:
        if len(chosen) >= passages:
            break
        anchor = sentences[index]
        if (anchor.source, anchor.position) in taken:
            continue
        room = min(MAX_PASSAGE_TOKENS, budget_tokens - used_tokens)
        passage = _grow(hits, by_chunk[anchor.source], anchor, scores[index], count_tokens, room, taken)
        if passage is None:
            continue
        chosen.append(passage)
        used_tokens += count_tokens(passage.text(hits))
        for sentence in by_chunk[anchor.source]:
            if passage.start <= sentence.start and sentence.end <= passage.end:
                taken.add((sentence.source, sentence.position))
    return chosen


def _grow(
    hits: Sequence[SearchHit],
    chunk: Sequence[SentenceSpan],
    anchor: SentenceSpan,
    score: float,
    count_tokens: Callable[[str], int],
    room: int,
    taken: set[tuple[int, int]],
) -> Passage | None:
    text = hits[anchor.source].text
    positions = {s.position: s for s in chunk}
    first = last = anchor
    if count_tokens(text[first.start : last.end]) > room:
        return None
    while True:
        grew = False
        for step in (-1, 1):  # the sentence before first: it carries the subject more often
            neighbour = positions.get((first if step < 0 else last).position + step)
            if neighbour is None:
                continue
            # A passage stays within its block (a paragraph, table or list, with what is indented
            # below it: an option's line and its description), except that a lead-in ("as
            # follows:") takes what it leads in to: a code example, a list, a table.
            leads_in = step > 0 and text[last.start : last.end].rstrip().endswith(":")
            if neighbour.block != anchor.block and not leads_in:
                continue
            if (neighbour.source, neighbour.position) in taken:
                continue
            grown = (neighbour, last) if step < 0 else (first, neighbour)
            if count_tokens(text[grown[0].start : grown[1].end]) <= room:
                first, last = grown
                grew = True
        if not grew or "\n" not in text[first.start : last.end]:
            break  # prose keeps one sentence each way; text laid out in lines grows on
    return Passage(anchor.source, first.start, last.end, anchor, score)
