"""The vector index protocol and its Chroma implementations (embedded here, the server in
`chroma_server`), which share the collection code.

The index records which embedder built it, by identity: model, runtime and precision
(`minilm-l6@onnx-int8`), in a `params.json` beside an embedded index. Opening it with another
embedder is refused, because its vectors would not be comparable; so is an index
from before identities were recorded (format 1), whose runtime is unknown.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from footnote.core.vectors import Vector
from footnote.errors import StoreError

Metadata = Mapping[str, str | int | float]

EMBED_RUNTIMES = ("onnx", "torch")  # the values of FOOTNOTE_EMBED_RUNTIME besides auto
EMBED_PRECISIONS = ("fp32", "int8", "bf16")  # the values of FOOTNOTE_EMBED_PRECISION besides auto
PARAMS_FILE = "params.json"
INDEX_FORMAT_VERSION = 2  # 2: `embedder` is an identity (model@runtime-precision), not a name
# An HNSW search finds most of the nearest vectors, not all, and which it misses depends on how
# its graph grew (insertion order, threads): the embedded index and the Chroma server it was moved
# to miss different ones. A query asks for several times the wanted number, and never fewer than
# ANN_MIN_SEARCH (asking for more widens the search), then keeps the nearest. On SciFact the two
# then rank the same top 10 for all 300 test queries in `footnote eval retrieval`'s hybrid search
# (286 when asked for the wanted number) and in 295 of 300 default searches (281)
# (benchmarks/results/shared_stores-*-20261203-*.json.xz).
ANN_OVERFETCH = 3
ANN_MIN_SEARCH = 300


class VectorIndex(ABC):
    """Vectors keyed by chunk id."""

    @abstractmethod
    def upsert(
        self, ids: Sequence[int], vectors: Sequence[Vector], metadata: Sequence[Metadata] | None = None
    ) -> None:
        """Store vectors, with per-chunk metadata (document_id, format, mtime) that `where` can filter."""

    @abstractmethod
    def query(
        self, vector: Vector, limit: int, where: dict[str, Any] | None = None
    ) -> list[tuple[int, float]]:
        """Nearest chunk ids with cosine similarity, best first; `where` is a Chroma metadata filter."""

    @abstractmethod
    def delete(self, ids: Sequence[int]) -> None: ...

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def ids(self) -> set[int]:
        """Every chunk id that has a vector."""

    def vectors(self, ids: Sequence[int]) -> dict[int, Vector]:
        """The stored vectors of `ids` (those it holds); an index that cannot return them gives {}."""
        return {}

    def close(self) -> None:  # noqa: B027 -- most indexes hold nothing open
        """Release what the index holds open (nothing, unless an index says otherwise)."""


class ChromaCollectionIndex(VectorIndex):
    """The vector index over one Chroma collection, wherever the collection lives; footnote
    supplies every vector itself. Subclasses open the collection and say how its calls fail."""

    collection_name = "chunks"
    _collection: Any

    def _reaching(self) -> AbstractContextManager[None]:
        """Around every call to the collection: where a remote failure becomes a StoreError."""
        return nullcontext()

    def upsert(
        self, ids: Sequence[int], vectors: Sequence[Vector], metadata: Sequence[Metadata] | None = None
    ) -> None:
        if ids:
            with self._reaching():
                self._collection.upsert(
                    ids=[str(i) for i in ids],
                    embeddings=[list(v) for v in vectors],
                    metadatas=[dict(m) for m in metadata] if metadata else None,
                )

    def query(
        self, vector: Vector, limit: int, where: dict[str, Any] | None = None
    ) -> list[tuple[int, float]]:
        """The `limit` nearest of the wider set the ANN graph was asked for, in order of similarity,
        then of chunk id, so that two indexes of the same vectors rank what they both find alike."""
        if limit <= 0:
            return []
        # Chroma returns what it has when asked for more than it holds (no count round trip).
        with self._reaching():
            result = self._collection.query(
                query_embeddings=[list(vector)],
                n_results=max(limit * ANN_OVERFETCH, ANN_MIN_SEARCH),
                include=["distances"],
                where=where,
            )
        ids, distances = result["ids"][0], result["distances"][0]
        found = [(int(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))[:limit]

    def delete(self, ids: Sequence[int]) -> None:
        if ids:
            with self._reaching():
                self._collection.delete(ids=[str(i) for i in ids])

    def vectors(self, ids: Sequence[int]) -> dict[int, Vector]:
        if not ids:
            return {}
        with self._reaching():
            found = self._collection.get(ids=[str(i) for i in ids], include=["embeddings"])
        return {int(i): [float(x) for x in v] for i, v in zip(found["ids"], found["embeddings"], strict=True)}

    def count(self) -> int:
        with self._reaching():
            return int(self._collection.count())

    def ids(self) -> set[int]:
        found: set[int] = set()
        page = 10_000
        offset = 0
        while True:
            with self._reaching():
                batch = self._collection.get(include=[], limit=page, offset=offset)["ids"]
            found.update(int(i) for i in batch)
            if len(batch) < page:
                return found
            offset += page


class ChromaVectorIndex(ChromaCollectionIndex):
    """Chroma's embedded PersistentClient, with the embedder's identity in `params.json` beside it."""

    def __init__(self, path: Path, embedder_name: str | None, dimension: int | None) -> None:
        """Open or create the index; `embedder_name` is the embedder's identity (`Embedder.identity`);
        None opens it for deletions only, unchecked."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        path.mkdir(parents=True, exist_ok=True)
        if embedder_name is not None:
            self._check_params(path / PARAMS_FILE, embedder_name, dimension or 0)
        self._client = chromadb.PersistentClient(
            path=str(path), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        )
        # embedding_function=None: Chroma's default would fetch an ONNX model from the network.
        self._collection = self._client.get_or_create_collection(
            self.collection_name, embedding_function=None, metadata={"hnsw:space": "cosine"}
        )

    def close(self) -> None:
        """Release the client: Chroma shares one open database per folder within a process, and
        one left open would serve a folder deleted and built again (`footnote ingest` after the
        index was removed) from the deleted files."""
        self._client.close()  # type: ignore[attr-defined]  # PersistentClient returns a Client, which has it

    @staticmethod
    def _check_params(params_path: Path, embedder_name: str, dimension: int) -> None:
        wanted = index_params(embedder_name, dimension)
        if not params_path.exists():
            params_path.write_text(json.dumps(wanted, indent=2))
            return
        rebuild = (
            f"delete {params_path.parent} and run `footnote ingest` on the same files to embed them "
            "again, or use a new FOOTNOTE_HOME and ingest again"
        )
        refuse_another_embedder(
            json.loads(params_path.read_text()), wanted, f"the vector index at {params_path.parent}", rebuild
        )


def index_params(embedder_name: str, dimension: int) -> dict[str, Any]:
    """What an index records about the embedder that built it."""
    return {"format": INDEX_FORMAT_VERSION, "embedder": embedder_name, "dimension": dimension}


def refuse_another_embedder(
    found: Mapping[str, Any], wanted: Mapping[str, Any], index: str, rebuild: str
) -> None:
    """Raise unless the recorded `found` is `wanted` (both as `index_params` gives them); the
    message names `index`, the settings that would open it, and `rebuild`."""
    if dict(found) == dict(wanted):
        return
    built_with = str(found.get("embedder"))
    embedder_name, dimension = wanted["embedder"], wanted["dimension"]
    if found.get("format") != INDEX_FORMAT_VERSION:
        raise StoreError(
            f"{index} was built with embedder '{built_with}' "
            "by an earlier footnote that did not record the embedder's runtime and precision, "
            f"so it cannot be checked against '{embedder_name}'; {rebuild}"
        )
    settings = _settings_for(built_with, embedder_name) if found.get("dimension") == dimension else ""
    raise StoreError(
        f"{index} was built with embedder "
        f"'{built_with}' ({found.get('dimension')} dimensions), not "
        f"'{embedder_name}' ({dimension}); {settings + ', or ' if settings else ''}{rebuild}"
    )


def recorded_embedding(path: Path, model: str) -> tuple[str, str] | None:
    """The (runtime, precision) that the index at `path` was built with by embedder `model`;
    None when there is no such index, or it records another model or no runtime."""
    found = recorded_params_at(path)
    return embedding_in(found, model) if found else None


def recorded_params_at(path: Path) -> dict[str, Any]:
    """What the index at `path` records of the embedder that built it; empty when there is none."""
    try:
        found = json.loads((path / PARAMS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def embedding_in(params: Mapping[str, Any], model: str) -> tuple[str, str] | None:
    """The (runtime, precision) that recorded `params` (as `index_params` gives them) name for
    embedder `model`; None when they record another model or no runtime."""
    if params.get("format") != INDEX_FORMAT_VERSION:
        return None
    built_model, _, how = str(params.get("embedder", "")).partition("@")
    runtime, _, precision = how.partition("-")
    if built_model != model or runtime not in EMBED_RUNTIMES or precision not in EMBED_PRECISIONS:
        return None
    return runtime, precision


def _settings_for(built_with: str, wanted: str) -> str:
    """The settings that open an index built with identity `built_with` when `wanted` is configured."""
    built_model, _, built_how = built_with.partition("@")
    model, _, how = wanted.partition("@")
    built_runtime, _, built_precision = built_how.partition("-")
    runtime, _, precision = how.partition("-")
    settings = []
    if built_model != model:
        settings.append(f"FOOTNOTE_EMBEDDER={built_model}")
    # Only runtimes and precisions that a setting selects; an embedder passed in code has others.
    if built_runtime != runtime and built_runtime in EMBED_RUNTIMES:
        settings.append(f"FOOTNOTE_EMBED_RUNTIME={built_runtime}")
    if built_precision != precision and built_precision in EMBED_PRECISIONS:
        settings.append(f"FOOTNOTE_EMBED_PRECISION={built_precision}")
    return "set " + " and ".join(settings) if settings else ""
