"""Settings of the HTTP server (`footnote serve`): where it listens, its keys, its limits and its latency
objectives. Part of `footnote.config.Settings`, read from `FOOTNOTE_*` like the rest.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import NoDecode


class ServerSettings(BaseModel):
    """The server's fields and their checks."""

    # --- the HTTP server (`footnote serve`) ------------------------------------------------
    host: str = Field("127.0.0.1", min_length=1, description="address to bind; non-loopback needs api_keys")
    port: int = Field(8080, ge=1, le=65535)
    # Secrets: shown as ********** in dumps and logs. FOOTNOTE_API_KEYS takes a comma-separated list.
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="bearer keys; when set, every API route requires one"
    )
    max_body_bytes: int = Field(1 << 20, ge=1024, description="largest JSON request body")
    max_upload_bytes: int = Field(50 << 20, ge=1024, description="largest uploaded document")
    max_concurrency: int = Field(1, ge=1, le=64, description="answers generated at once")
    max_queue: int = Field(8, ge=0, le=10_000, description="answers waiting for a slot before 429")
    max_work_concurrency: int = Field(4, ge=1, le=64, description="searches, embeddings, ingests at once")
    max_tokens_cap: int = Field(512, ge=16, description="most tokens one request may ask an answer to use")
    request_timeout: float = Field(300.0, gt=0, le=3600, description="seconds a request may wait and run")
    # Latency objectives, seconds from arrival to the answer's end, by request class: a request is
    # admitted only when its estimated wait plus one service time fits (server/admission.py).
    latency_objective_interactive: float = Field(
        2.0, gt=0, le=3600, description="seconds an interactive answer (the web page's) may take"
    )
    latency_objective_api: float = Field(2.0, gt=0, le=3600, description="seconds an API answer may take")
    latency_objective_batch: float = Field(
        120.0, gt=0, le=3600, description="seconds a batch answer may take (X-Footnote-Class: batch)"
    )
    preload_models: bool = Field(True, description="load the models when the server starts")

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_api_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [key.strip() for key in value.split(",") if key.strip()]
        return value

    @field_validator("api_keys", mode="after")
    @classmethod
    def _strong_api_keys(cls, keys: list[SecretStr]) -> list[SecretStr]:
        for position, key in enumerate(keys, start=1):
            secret = key.get_secret_value()
            if len(secret) < 16 or any(ch.isspace() for ch in secret):
                raise ValueError(
                    f"API key #{position} is too weak: use 16 or more characters without spaces "
                    "(for example the output of `openssl rand -hex 32`)"
                )
        return keys
