"""Training examples for the sentence reader, from public QA data.

An example is one question with its candidate sentences, each labelled 1 when it states an
accepted answer: the sentences of the paragraph the question was written on, plus the sentences
of other paragraphs of the same document that share most words with it (the near misses a
retriever brings). A SQuAD 2.0 question that cannot be answered keeps every candidate at 0,
the sentence holding its plausible-looking distractor included: that is how the reader learns
to tell a sentence that answers from one that only resembles an answer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from footnote.answer.citations import CitationChecker
from footnote.answer.evidence import reader_candidates
from footnote.answer.sentence_spans import SentenceSpan
from footnote.answer.terms import content_terms
from footnote.core.hits import SearchHit
from footnote.core.sentences import split_sentences
from footnote.errors import ConfigError
from footnote.models.sentence_reader import reader_input

# Candidates of one question: at most this many from its own paragraph, and this many near misses.
PARAGRAPH_CANDIDATES = 4
NEAR_MISSES = 1


@dataclass(frozen=True)
class ReaderExample:
    """One question, its candidates (reader inputs) and their labels; `group` is its document."""

    question: str
    candidates: tuple[str, ...]
    labels: tuple[int, ...]
    group: str

    @property
    def answerable(self) -> bool:
        return any(self.labels)


@dataclass(frozen=True)
class _Sentence:
    paragraph: int
    start: int
    end: int
    text: str
    lead: str  # the first sentence of its paragraph, when it is not that sentence
    terms: frozenset[str]


def squad_examples(path: Path, seed: int = 0, articles: Iterable[str] | None = None) -> list[ReaderExample]:
    """Examples from a SQuAD 2.0 file (`articles`: only those titles), grouped by article."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path} is not a SQuAD 2.0 file ({exc}); pass squad-v2.0.json") from exc
    wanted = set(articles) if articles is not None else None
    rng = random.Random(seed)
    examples: list[ReaderExample] = []
    for article in data:
        if wanted is not None and article["title"] not in wanted:
            continue
        examples.extend(_article_examples(article, rng))
    return examples


def squad_titles(path: Path) -> list[str]:
    return [article["title"] for article in json.loads(path.read_text(encoding="utf-8"))["data"]]


def _article_examples(article: dict, rng: random.Random) -> list[ReaderExample]:
    title = article["title"].replace("_", " ")
    sentences = list(_article_sentences(article["paragraphs"]))
    examples = []
    for index, paragraph in enumerate(article["paragraphs"]):
        own = [s for s in sentences if s.paragraph == index]
        others = [s for s in sentences if s.paragraph != index]
        for qa in paragraph["qas"]:
            spans = qa.get("answers") or []
            starts = [a["answer_start"] for a in spans]
            decoys = [a["answer_start"] for a in qa.get("plausible_answers") or []]
            positive = [s for s in own if any(s.start <= x < s.end for x in starts)]
            decoy = [s for s in own if any(s.start <= x < s.end for x in decoys)]
            chosen = _choose(own, positive + decoy, rng)
            chosen += near_misses(qa["question"], others, NEAR_MISSES)
            candidates = tuple(reader_input(s.text, title, s.lead) for s in chosen)
            labels = tuple(int(s in positive) for s in chosen)
            examples.append(ReaderExample(qa["question"].strip(), candidates, labels, article["title"]))
    return examples


def _article_sentences(paragraphs: Sequence[dict]) -> Iterable[_Sentence]:
    for index, paragraph in enumerate(paragraphs):
        context = paragraph["context"]
        bounds = split_sentences(context)
        first = context[bounds[0][0] : bounds[0][1]] if bounds else ""
        for position, (start, end) in enumerate(bounds):
            text = context[start:end]
            lead = first if position else ""
            yield _Sentence(index, start, end, text, lead, frozenset(content_terms(text)))


def _choose(own: list[_Sentence], kept: list[_Sentence], rng: random.Random) -> list[_Sentence]:
    """At most PARAGRAPH_CANDIDATES of the paragraph's sentences, every one in `kept` among them."""
    rest = [s for s in own if s not in kept]
    rng.shuffle(rest)
    chosen = list(dict.fromkeys(kept)) + rest
    return chosen[: max(PARAGRAPH_CANDIDATES, len(set(kept)))]


def near_misses(question: str, pool: Sequence[_Sentence], count: int) -> list[_Sentence]:
    """The `count` sentences of `pool` that share the most weighted terms with `question`."""
    asked = content_terms(question)
    scored = sorted(pool, key=lambda s: -sum(w for t, w in asked.items() if t in s.terms))
    return scored[:count]


def retrieved_candidates(
    hits: Sequence[SearchHit], question: str
) -> tuple[list[SentenceSpan], list[str], list[str]]:
    """Every sentence of the retrieved `hits` as the answer engine splits them: (spans, texts,
    the reader's inputs), the candidates a question is read with at answer time."""
    spans = CitationChecker(hits, None, question=question).sentence_spans()
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    return spans, texts, reader_candidates(hits, spans, texts)


def kept_candidates(first: Sequence[bool], scores: Sequence[float], most: int) -> list[int]:
    """The indices of at most `most` candidates, in their order: those marked `first`, then the
    best `scores`."""
    return sorted(sorted(range(len(scores)), key=lambda i: (-first[i], -scores[i]))[:most])


def split_by_group(examples: Sequence[ReaderExample], held_out: Iterable[str]) -> tuple[list, list]:
    """(training, held-out) examples: whole documents go to one side or the other."""
    held = set(held_out)
    return [e for e in examples if e.group not in held], [e for e in examples if e.group in held]


def open_examples(path: Path, about: dict) -> TextIO:
    """A new examples file holding its `about` line, open for `write_example`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = path.open("w", encoding="utf-8")
    out.write(json.dumps({"about": about}) + "\n")
    return out


def write_example(out: TextIO, e: ReaderExample) -> None:
    row = {"question": e.question, "candidates": e.candidates, "labels": e.labels, "group": e.group}
    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.flush()


def load_examples(path: Path) -> list[ReaderExample]:
    """The examples written by `open_examples` and `write_example`."""
    examples = []
    try:
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            row = json.loads(line)
            examples.append(
                ReaderExample(row["question"], tuple(row["candidates"]), tuple(row["labels"]), row["group"])
            )
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(
            f"{path} holds no reader examples ({exc}); make it with scripts/reader_questions.py"
        ) from exc
    return examples
