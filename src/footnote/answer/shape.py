"""The answer's shape: one direct answer for a single fact, several checked passages for a
question that needs them (a summary, a procedure, a list, a comparison).

The shape is read from the question's multilingual embedding by a logistic regression that
footnote trains (`footnote train shape`, `footnote.training.shape`) and ships pinned by SHA-256
(`models/shape/shape.json`): no trigger words, so a Chinese question is read as an English one is.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from footnote.errors import ConfigError
from footnote.models.base import Embedder, Vector
from footnote.models.registry import verify_file

SHAPE_FILE = Path(__file__).parent.parent / "models" / "shape" / "shape.json"
SHAPE_SHA256 = "e10d80c6ec43775c344d9359991b95f5195c17a7a8e64d036618c4f409d0a0e1"
SHAPE_FIX = (
    "restore it with `git checkout src/footnote/models/shape`, or rebuild it with `footnote train shape`"
)


@dataclass(frozen=True)
class ShapeModel:
    """Weights over one embedder's query vectors; a question at or above `threshold` is broad."""

    embedder: str
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def broad_probability(self, vector: Vector) -> float:
        """The probability that the question embedded as `vector` needs several passages."""
        logit = self.bias + sum(w * float(x) for w, x in zip(self.weights, vector, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, logit))))

    def is_broad(self, vector: Vector) -> bool:
        return self.broad_probability(vector) >= self.threshold


def read_shape(path: Path) -> ShapeModel:
    """The shape model in `path`, or a ConfigError naming the file and the fix."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        weights = tuple(float(w) for w in data["weights"])
        return ShapeModel(str(data["embedder"]), weights, float(data["bias"]), float(data["threshold"]))
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"{path} is not a shape model ({exc.__class__.__name__}: {exc}); write one with "
            "`footnote train shape --out FILE`"
        ) from exc


BUNDLED_SHAPE = "footnote"


def open_shape(choice: str) -> ShapeModel:
    """The shape model `choice` names (setting FOOTNOTE_ANSWER_SHAPE): the bundled one, or a
    file written by `footnote train shape --out FILE`."""
    if choice == BUNDLED_SHAPE:
        return bundled_shape()
    path = Path(choice).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"FOOTNOTE_ANSWER_SHAPE={choice}: no such file; give a file written by "
            f"`footnote train shape --out FILE`, or {BUNDLED_SHAPE} for the shipped model"
        )
    return read_shape(path)


@cache
def bundled_shape() -> ShapeModel:
    """The shape model shipped with footnote, checked against its pinned SHA-256."""
    verify_file(SHAPE_FILE, SHAPE_SHA256, SHAPE_FIX)
    return read_shape(SHAPE_FILE)


@dataclass(frozen=True)
class QuestionShape:
    """The shape model with the embedder it reads questions through."""

    embedder: Embedder
    model: ShapeModel

    def needs_points(self, question: str) -> bool:
        """Whether `question` needs several passages rather than one fact."""
        return self.model.is_broad(self.embedder.embed_query(question))
