"""Sections: which of the retrieved chunks a broad answer draws its points from.

The sentence reader was taught to find the sentence stating one fact; read over the sentences of
a manual for a summary, a list or a comparison, the chunk it weighs most is often a change log
that names the function, not the section that explains it. A logistic regression weighs each
chunk by what the answer already knows about it: where retrieval ranked it (fused, by keywords,
by meaning), how the reader read its sentences (their summed belief, the best one), how the
reader reads the whole chunk and its headings against the question, the multilingual embedder's
similarity of the chunk's beginning to the question, how many of the retrieved chunks share its document,
its length and how much of it is code. The chunk's logit, times the model's `bonus`, is added to
its sentences' scores before the points are chosen (`footnote.answer.points`).

`footnote train sections` fits it on broad-dev's summaries, how-tos, lists and comparisons (a
chunk is positive when it holds a key point), with folds by document, and reports the answers'
completeness in sample and cross-validated; the model ships pinned by SHA-256
(`models/sections/sections.json`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from footnote.answer.points import ScoredSentences, chunk_weights
from footnote.core.cjk import count_words
from footnote.core.hits import SearchHit
from footnote.errors import ConfigError
from footnote.models.base import Embedder
from footnote.models.registry import verify_file
from footnote.models.sentence_reader import SentenceReader, reader_input

SECTIONS_FILE = Path(__file__).parent.parent / "models" / "sections" / "sections.json"
SECTIONS_SHA256 = "29790c97c96b5c77bd15bfa53a8b5830ce019895e4e1e70d70ecec5b8d30bc77"
SECTIONS_FIX = (
    "restore it with `git checkout src/footnote/models/sections`, "
    "or rebuild it with `footnote train sections`"
)
BUNDLED_SECTIONS = "footnote"
SECTIONS_OFF = "off"

FEATURES = (
    "rank",  # the chunk's place among the retrieved ones
    "keyword_rank",  # log(1 + its rank in the keyword list), 99 when absent
    "dense_rank",  # the same in the dense list
    "weight",  # the reader's summed belief over its sentences, less the best chunk's
    "best_sentence",  # its best sentence's score, less the best of all
    "similarity",  # the multilingual embedder's similarity of its beginning to the question, less the best
    "same_document",  # how many retrieved chunks share its document
    "document_rank",  # the place of its document's first chunk among the retrieved ones
    "words",  # log(1 + its words)
    "code",  # the share of its characters that mark code or markup
    "chunk_read",  # the reader's score of the whole chunk (its heading for context)
    "heading_read",  # the reader's score of its headings and title alone
)
_ABSENT = 99  # the rank of a chunk a list did not return
_UNREAD = -30.0  # the score of a chunk none of whose sentences was read
_CODE_MARKS = frozenset("`$-=_()[]{}<>|*#")
_CHUNK_CHARS = 1500  # the reader sees this much of a chunk; its window cuts the rest
# The embedder reads the beginning of a chunk (its heading and first lines): read whole, ten
# chunks took 0.45 s a question on 2 cores, their first 150 characters 0.13-0.18 s, and broad-dev's
# answers were as often complete cross-validated (24 of 38).
_SIMILARITY_CHARS = 150


@dataclass(frozen=True)
class SectionModel:
    """A logistic regression over standardised `FEATURES`, and the bonus its logit earns."""

    weights: tuple[float, ...]
    bias: float
    means: tuple[float, ...]
    scales: tuple[float, ...]
    bonus: float

    def logit(self, row: Sequence[float]) -> float:
        return self.bias + sum(
            w * (x - m) / s for w, x, m, s in zip(self.weights, row, self.means, self.scales, strict=True)
        )


def read_sections(path: Path) -> SectionModel:
    """The section model in `path`, or a ConfigError naming the file and the fix."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"features {data['features']}, not {list(FEATURES)}")
        model = SectionModel(
            tuple(float(w) for w in data["weights"]),
            float(data["bias"]),
            tuple(float(m) for m in data["means"]),
            tuple(float(s) for s in data["scales"]),
            float(data["bonus"]),
        )
        if not len(model.weights) == len(model.means) == len(model.scales) == len(FEATURES):
            raise ValueError(f"{len(model.weights)} weights for {len(FEATURES)} features")
        return model
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"{path} is not a section model ({exc.__class__.__name__}: {exc}); write one with "
            "`footnote train sections --out FILE`"
        ) from exc


def open_sections(choice: str) -> SectionModel | None:
    """The section model `choice` names (setting FOOTNOTE_ANSWER_SECTIONS): the bundled one, a
    file written by `footnote train sections --out FILE`, or none (`off`: the reader alone)."""
    if choice == SECTIONS_OFF:
        return None
    if choice == BUNDLED_SECTIONS:
        return bundled_sections()
    path = Path(choice).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"FOOTNOTE_ANSWER_SECTIONS={choice}: no such file; give a file written by `footnote train "
            f"sections --out FILE`, {BUNDLED_SECTIONS} for the shipped model, or {SECTIONS_OFF}"
        )
    return read_sections(path)


@cache
def bundled_sections() -> SectionModel:
    """The section model shipped with footnote, checked against its pinned SHA-256."""
    verify_file(SECTIONS_FILE, SECTIONS_SHA256, SECTIONS_FIX)
    return read_sections(SECTIONS_FILE)


@dataclass(frozen=True)
class ChunkReadings:
    """What the models read of each retrieved chunk as a whole, in the order of the hits."""

    chunk: Sequence[float]  # the reader's score of the chunk
    heading: Sequence[float]  # the reader's score of its headings and title
    similarity: Sequence[float]  # the multilingual embedder's similarity to the question


def read_chunks(
    question: str, hits: Sequence[SearchHit], reader: SentenceReader, embedder: Embedder
) -> ChunkReadings:
    """Each chunk of `hits` read whole by the sentence reader and embedded by `embedder`."""
    chunks = [reader_input(hit.text[:_CHUNK_CHARS], " > ".join(hit.heading_path)) for hit in hits]
    headings = [reader_input(" > ".join(hit.heading_path) or hit.title, hit.title) for hit in hits]
    scores = reader.read(question, [*chunks, *headings]).scores
    asked = embedder.embed_query(question)
    vectors = embedder.embed_many([hit.text[:_SIMILARITY_CHARS] for hit in hits])
    similarity = [sum(float(a) * float(b) for a, b in zip(asked, vector, strict=True)) for vector in vectors]
    return ChunkReadings(scores[: len(hits)], scores[len(hits) :], similarity)


def section_features(
    hits: Sequence[SearchHit], scored: ScoredSentences, readings: ChunkReadings
) -> list[list[float]]:
    """`FEATURES` of each chunk of `hits`, in their order."""
    weights = chunk_weights(scored)
    best_weight = max(weights.values(), default=0.0)
    best: dict[int, float] = {}
    for span, score in zip(scored.spans, scored.scores, strict=True):
        best[span.source] = max(best.get(span.source, _UNREAD), score)
    best_score = max(best.values(), default=0.0)
    top_similarity = max(readings.similarity, default=0.0)
    documents = [hit.document_id for hit in hits]
    rows = []
    for rank, hit in enumerate(hits):
        rows.append(
            [
                float(rank),
                math.log1p(_ABSENT if hit.keyword_rank is None else hit.keyword_rank),
                math.log1p(_ABSENT if hit.dense_rank is None else hit.dense_rank),
                weights.get(rank, _UNREAD) - best_weight,
                best.get(rank, _UNREAD) - best_score,
                readings.similarity[rank] - top_similarity,
                float(documents.count(hit.document_id)),
                float(documents.index(hit.document_id)),
                math.log1p(count_words(hit.text)),
                sum(char in _CODE_MARKS for char in hit.text) / max(1, len(hit.text)),
                readings.chunk[rank],
                readings.heading[rank],
            ]
        )
    return rows


def weighed_by(
    model: SectionModel | None,
    reader: SentenceReader | None,
    embedder: Embedder,
    question: str,
    hits: Sequence[SearchHit],
    scored: ScoredSentences,
) -> ScoredSentences:
    """A broad question's sentences weighed by `model` (`weighed_sections`), its chunks read by
    `reader` and `embedder`; as read where there is no model or the sentence reader did not read
    them (a question read across languages is scored by the embedder's similarities instead)."""
    if model is None or reader is None or not scored.by_reader:
        return scored
    return weighed_sections(model, hits, scored, read_chunks(question, hits, reader, embedder))


def weighed_sections(
    model: SectionModel, hits: Sequence[SearchHit], scored: ScoredSentences, readings: ChunkReadings
) -> ScoredSentences:
    """`scored` with each sentence's score raised by its chunk's logit times the model's bonus."""
    bonus = [model.bonus * model.logit(row) for row in section_features(hits, scored, readings)]
    scores = [score + bonus[span.source] for span, score in zip(scored.spans, scored.scores, strict=True)]
    return ScoredSentences(scored.spans, scored.texts, scores, scored.by_reader)
