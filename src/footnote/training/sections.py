"""Training the section model (`footnote.answer.sections`): which retrieved chunks a broad answer
draws its points from.

Each example is one of broad-dev's summaries, how-tos, lists and comparisons as the engine reads
it: its retrieved chunks, every sentence as the reader read it, and each chunk read whole; a chunk
is labelled positive when it holds one of the question's key points. A logistic regression over
the standardised features is fitted to every chunk; the bonus its logit earns is the one of
`BONUSES` whose answers are complete most often cross-validated (folds by document: no
document's questions are both trained on and scored), and the report gives completeness per kind
in sample and cross-validated, beside the reader alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from footnote.answer.points import ScoredSentences, select_points
from footnote.answer.sections import FEATURES, ChunkReadings, SectionModel, section_features, weighed_sections
from footnote.core.hits import SearchHit

SEED = 0
FOLDS = 5
REGULARISATION = 0.3  # sklearn's C, on standardised features
BONUSES = (1.0, 2.0, 4.0)


@dataclass(frozen=True)
class SectionExample:
    """One broad question as the engine read it, and how to count the key points of an answer."""

    group: str  # its document: the folds keep a document's questions together
    kind: str
    hits: Sequence[SearchHit]
    scored: ScoredSentences
    readings: ChunkReadings
    labels: Sequence[int]  # per chunk: 1 when it holds a key point
    complete: Callable[[Sequence[str]], bool]  # whether these quotes hold enough key points


def folds(examples: Sequence[SectionExample], fold_of: Mapping[str, int] | None = None) -> list[int]:
    """Each example's fold, by its document: as `fold_of` gives it, else documents shuffled with `SEED`."""
    if fold_of is None:
        groups = sorted({e.group for e in examples})
        random.Random(SEED).shuffle(groups)
        fold_of = {group: index % FOLDS for index, group in enumerate(groups)}
    return [fold_of[e.group] for e in examples]


def fit(examples: Sequence[SectionExample], bonus: float) -> SectionModel:
    """The model fitted to every chunk of `examples`, with `bonus`."""
    from sklearn.linear_model import LogisticRegression

    rows = np.array([row for e in examples for row in section_features(e.hits, e.scored, e.readings)])
    labels = np.array([label for e in examples for label in e.labels])
    means, scales = rows.mean(axis=0), rows.std(axis=0)
    scales[scales == 0] = 1.0
    model = LogisticRegression(C=REGULARISATION, max_iter=5000).fit((rows - means) / scales, labels)
    return SectionModel(
        tuple(float(w) for w in model.coef_[0]),
        float(model.intercept_[0]),
        tuple(float(m) for m in means),
        tuple(float(s) for s in scales),
        bonus,
    )


def answered_completely(example: SectionExample, model: SectionModel | None, point_words: int) -> bool:
    """Whether the points chosen for `example` (weighed by `model`, or by the reader alone) are complete."""
    scored = (
        example.scored
        if model is None
        else weighed_sections(model, example.hits, example.scored, example.readings)
    )
    points = select_points(example.hits, scored, point_words)
    return example.complete([example.hits[p.source].text[p.start : p.end] for p in points])


def completeness(
    examples: Sequence[SectionExample], models: Sequence[SectionModel | None], point_words: int
) -> dict[str, float]:
    """Per kind (and over all), the share of complete answers, each example with its own model."""
    kinds: dict[str, list[bool]] = {}
    for example, model in zip(examples, models, strict=True):
        done = answered_completely(example, model, point_words)
        kinds.setdefault(example.kind, []).append(done)
        kinds.setdefault("all", []).append(done)
    return {kind: round(sum(v) / len(v), 4) for kind, v in sorted(kinds.items())}


def fold_models(
    examples: Sequence[SectionExample], bonus: float, fold_of: Mapping[str, int] | None = None
) -> list[SectionModel]:
    """Per fold, the model fitted without that fold's documents (`folds`)."""
    fold = folds(examples, fold_of)
    return [fit([e for e, f in zip(examples, fold, strict=True) if f != n], bonus) for n in range(FOLDS)]


def train_sections(
    examples: Sequence[SectionExample], point_words: int
) -> tuple[SectionModel, dict[str, Any]]:
    """The model fitted to every example with the bonus chosen cross-validated, and its report."""
    fold = folds(examples)
    reader_alone = completeness(examples, [None] * len(examples), point_words)
    tried = {}
    for bonus in BONUSES:
        held = fold_models(examples, bonus)
        full = fit(examples, bonus)
        tried[bonus] = {
            "in_sample": completeness(examples, [full] * len(examples), point_words),
            "cross_validated_by_document": completeness(examples, [held[f] for f in fold], point_words),
        }
    bonus = max(BONUSES, key=lambda b: (tried[b]["cross_validated_by_document"]["all"], -b))
    model = fit(examples, bonus)
    report = {
        **manifest(model),
        "trained_on": "broad-dev's summary, howto, list and compare questions over docqa-dev's documents "
        f"({len(examples)} questions, {sum(len(e.labels) for e in examples)} chunks)",
        "licence": "footnote's own: fitted weights over footnote's features",
        "complete": {"reader_alone": reader_alone, **{f"bonus_{b:g}": v for b, v in tried.items()}},
    }
    return model, report


def manifest(model: SectionModel) -> dict[str, Any]:
    """`model` as its file stores it (`footnote.answer.sections.read_sections` reads it back)."""
    return {
        "features": list(FEATURES),
        "weights": list(model.weights),
        "bias": model.bias,
        "means": list(model.means),
        "scales": list(model.scales),
        "bonus": model.bonus,
    }
