"""The body of /v1/settings: the models, backends and limits a server runs with."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Backends(BaseModel):
    generator: str | None = Field(description="the LLM backend's class; null until the models are loaded")
    embedder: str | None
    vector_index: str | None


class ServerSettings(BaseModel):
    object: Literal["settings"] = "settings"
    version: str
    llm: str
    embedder: str
    models_state: Literal["idle", "loading", "ready", "failed"]
    backends: Backends
    top_k: int
    chunk_tokens: int
    chunk_overlap: int
    context_tokens: int
    answer_tokens: int
    temperature: float
    max_upload_bytes: int
    max_body_bytes: int
    max_concurrency: int
    request_timeout: float
    auth_required: bool = Field(description="whether the API asks for a key")
