"""Deterministic test doubles: real subclasses of footnote's model protocols."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from footnote.answer.judge import SupportJudge
from footnote.answer.terms import content_terms
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.ingest.pipeline import Ingestor
from footnote.models.base import Embedder, GenerationParams, Generator, Message, Vector
from footnote.models.scoring import Tokenizer
from footnote.store.sqlite import SqliteCatalog
from footnote.store.vectors import ChromaVectorIndex

# Words, and each CJK character on its own (CJK text has no spaces between words).
_UNIGRAM = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|\w+")
_PIECE = re.compile(r"\s*\S+|\s+")


class HashingEmbedder(Embedder):
    """Hashed bag of lower-cased unigrams, L2-normalised: texts sharing words point alike."""

    name = "hashing"
    max_tokens = 512

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.calls: list[list[str]] = []  # each batch embedded, to assert on batching

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        self.calls.append(list(texts))
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> Vector:
        vector = [0.0] * self.dimension
        for word in _UNIGRAM.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dimension
            # A hashed sign keeps collisions from making unrelated texts look alike.
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(value * value for value in vector))
        return [value / norm for value in vector] if norm else vector


class ScriptedGenerator(Generator):
    """Streams queued replies word by word, one reply per call, and records each chat."""

    name = "scripted"

    def __init__(self, replies: Iterable[str], context_length: int = 2048) -> None:
        self.replies = list(replies)
        self.context_length = context_length
        self.calls: list[list[Message]] = []

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        self.calls.append(list(messages))
        if not self.replies:
            raise AssertionError(
                f"ScriptedGenerator has no reply left for call {len(self.calls)}; queue more replies"
            )
        reply = self.replies.pop(0)
        for stop in params.stop:
            if stop and stop in reply:
                reply = reply[: reply.index(stop)]
        # A plain iterator, not a generator, so an exhausted script fails at the call itself.
        return iter(_PIECE.findall(reply)[: max(params.max_tokens, 0)])


class WordJudge(SupportJudge):
    """Supports a claim exactly when every content term of it occurs in the premise.

    Unlike overlap scoring, one missing term is enough to reject: a strict, predictable stand-in
    for an entailment model. Records every pair it is asked about.
    """

    name = "words"

    def __init__(self, supported: float = 1.0, unsupported: float = 0.0) -> None:
        self.supported = supported
        self.unsupported = unsupported
        self.pairs: list[tuple[str, str]] = []

    def support(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.pairs.extend(pairs)
        return [
            self.supported if set(content_terms(claim)) <= set(content_terms(premise)) else self.unsupported
            for premise, claim in pairs
        ]


class WordTokenizer(Tokenizer):
    """One id per distinct whitespace-separated word, assigned in order of first sight; BOS is 0."""

    bos_id = 0
    add_bos = True

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def tokenize(self, text: str) -> list[int]:
        return [self.ids.setdefault(word, len(self.ids) + 1) for word in text.split()]


def bees_and_tides(tmp_path: Path) -> Iterator[Application]:
    """An application over two short English documents (bees share where food is with a dance;
    the moon pulls the oceans), with the hashing embedder, no language embedder and a generator
    that has nothing to say: for tests of reading across languages."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bees.md").write_text(
        "# Bees\n\nA colony lives in one nest. Foraging bees share where food is with a dance.\n",
        encoding="utf-8",
    )
    (folder / "tides.md").write_text(
        "# Tides\n\nThe moon pulls the oceans into two bulges.\n", encoding="utf-8"
    )
    settings = Settings(home=tmp_path / "home", reader="extract", language_embedder="none")
    application = create_app(settings, embedder=HashingEmbedder(), generator=ScriptedGenerator([]))
    application.ingest([folder])
    yield application
    application.close()


@dataclass(frozen=True)
class HashedIndex:
    """A real SQLite catalog and embedded Chroma index, filled through the real ingestor with the
    hashing embedder: for tests of retrieval's own logic."""

    catalog: SqliteCatalog
    vectors: ChromaVectorIndex
    embedder: HashingEmbedder
    ingestor: Ingestor


def hashed_index(home: Path) -> HashedIndex:
    """An empty `HashedIndex` under `home`; close its catalog when done."""
    catalog = SqliteCatalog(home / "catalog.sqlite3")
    embedder = HashingEmbedder()
    vectors = ChromaVectorIndex(home / "vectors", embedder.name, embedder.dimension)
    return HashedIndex(catalog, vectors, embedder, Ingestor(catalog, vectors, embedder))
