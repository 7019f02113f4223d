"""The two model protocols: one required method each, conveniences built on top."""

from __future__ import annotations

import math
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from footnote.core.vectors import Vector

__all__ = ["Embedder", "GenerationParams", "Generator", "GeneratorInfo", "Message", "RecentVectors", "Vector"]
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


# Positions (rows × the longest row) an encoder runs in one batch of texts of mixed lengths.
# Every row is padded to the longest, so one long sentence in a batch of 32 short ones costs 32
# long rows: on 2 cores, MiniLM embeds a question's source sentences 3x faster, and the reader
# reads them 1.14x faster, in batches of at most 512 positions than in fixed batches of 32 and 16
# (`benchmarks/batch_positions.py`, retired).
BATCH_POSITIONS = 512


def padded_batches(lengths: Sequence[int], rows: int, positions: int = BATCH_POSITIONS) -> list[list[int]]:
    """The indexes of `lengths` in batches, shortest first: at most `rows` in a batch and at most
    `positions` once every row is padded to the batch's longest (a longer text goes alone)."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        if batch and (len(batch) >= rows or (len(batch) + 1) * lengths[index] > positions):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


def approximate_token_count(text: str) -> int:
    """A tokenizer-free estimate: words and punctuation marks, a little inflated for sub-words."""
    return math.ceil(len(_WORD.findall(text)) * 1.3)


class Embedder(ABC):
    """Turns texts into vectors. Subclasses implement `embed_batch` only."""

    name: str = "embedder"  # what clients are shown, e.g. as the model of an embeddings response
    dimension: int = 0
    max_tokens: int = 256  # longest input the model sees without truncating
    # One model run by another runtime, or at another precision, gives vectors close to these
    # but not equal, so an index records all three (`identity`) and is queried only with them.
    model_name: str = ""  # the model alone; empty: `name`
    runtime: str = "python"
    precision: str = "fp32"

    @property
    def identity(self) -> str:
        """The model, its runtime and its precision, e.g. `minilm-l6@onnx-int8`."""
        return f"{self.model_name or self.name}@{self.runtime}-{self.precision}"

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        """Embed one batch of texts; vectors are L2-normalised."""

    def embed(self, text: str) -> Vector:
        return self.embed_batch([text])[0]

    def embed_query(self, text: str) -> Vector:
        """A search query's vector: `embed` unless the model was trained to mark queries apart
        from the passages they find (e5's `query: ` and `passage: `)."""
        return self.embed(text)

    def embed_many(self, texts: Sequence[str], batch_size: int = 32) -> list[Vector]:
        vectors: list[Vector] = []
        for start in range(0, len(texts), batch_size):
            vectors.extend(self.embed_batch(texts[start : start + batch_size]))
        return vectors

    def count_tokens(self, text: str) -> int:
        """Tokens the model would see for `text` (subclasses with a tokenizer are exact)."""
        return approximate_token_count(text)

    def token_offsets(self, text: str) -> list[tuple[int, int]] | None:
        """Character spans of `text`'s tokens, special tokens left out; None without a tokenizer."""
        return None


def precision_name(model_name: str, precision: str) -> str:
    """The name clients see: the model's, marked when its weights are not in float."""
    return model_name if precision == "fp32" else f"{model_name}-{precision}"


class RecentVectors:
    """The vectors of recently embedded single texts: a request embeds its question more than
    once (answer cache, retrieval, citations), and users repeat queries. Thread-safe."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._vectors: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Vector | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
            return vector

    def put(self, text: str, vector: Vector) -> None:
        with self._lock:
            self._vectors[text] = vector
            if len(self._vectors) > self._size:
                self._vectors.popitem(last=False)

    def get_or_make(self, text: str, make: Callable[[str], Vector]) -> Vector:
        """A copy of the kept vector of `text`, made (outside the lock) and kept when missing."""
        vector = self.get(text)
        if vector is None:
            vector = make(text)
            self.put(text, vector)
        return list(vector)


Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int = 0
    # Above 1.0, tokens the model wrote recently are made less likely: a small model's loops
    # ("--best --best --best") are damped while it samples (footnote.core.loops ends the rest).
    repeat_penalty: float = 1.0
    # Scheduling, used by routed backends: larger `priority` is served first; `deadline` is a
    # `time.monotonic()` instant after which the request is given up; `model` names a pool.
    priority: int = 0
    deadline: float | None = None
    model: str | None = None


@dataclass
class GeneratorInfo:
    name: str
    context_length: int
    details: dict[str, str] = field(default_factory=dict)


class Generator(ABC):
    """Streams text for a chat. Subclasses implement `stream` only."""

    name: str = "generator"
    context_length: int = 2048
    thread_safe: bool = False  # may `stream` run in several threads at once?

    @abstractmethod
    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        """Yield the reply to `messages` piece by piece as it is generated."""

    def generate(self, messages: Sequence[Message], params: GenerationParams) -> str:
        return "".join(self.stream(messages, params))

    def count_tokens(self, text: str) -> int:
        """Tokens this model would use for `text` (subclasses with a tokenizer are exact)."""
        return approximate_token_count(text)

    def count_message_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of a chat, with a small allowance per message for the chat template."""
        return sum(self.count_tokens(message.content) + 8 for message in messages)
