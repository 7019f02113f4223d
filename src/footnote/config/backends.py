"""Settings of one remote generation backend (an OpenAI-compatible server) and its routing rules."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

Task = Literal["generate", "score", "embed"]
EMBEDDED = "embedded"  # base_url naming the in-process llama.cpp model instead of a server


def _generation_only() -> list[Task]:
    return ["generate"]


class BackendSettings(BaseModel):
    """One pool: a vLLM, llama.cpp, Ollama or LM Studio server, or the embedded model."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(description="e.g. http://gpu-1:8000/v1, or 'embedded' for the in-process model")
    name: str = Field("", description="shown in logs and metrics; defaults to the base URL")
    api_key: SecretStr | None = Field(None, description="bearer key the server expects")
    model: str = Field("default", min_length=1, description="model name sent in each request")
    context_length: int = Field(2048, ge=256, description="the server's context window, in tokens")
    max_concurrency: int = Field(1, ge=1, le=1024, description="requests sent to this server at once")
    max_queue: int = Field(16, ge=0, le=100_000, description="requests waiting for it before 429")
    connect_timeout: float = Field(5.0, gt=0, le=600, description="seconds to open a connection")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds without data: stalled")
    max_tokens_cap: int | None = Field(None, ge=1, description="most tokens one request may use here")
    min_prompt_tokens: int = Field(0, ge=0, description="route prompts at least this long here")
    max_prompt_tokens: int | None = Field(None, ge=1, description="route prompts at most this long here")
    tasks: list[Task] = Field(default_factory=_generation_only, description="what this pool serves")
    failure_threshold: int = Field(3, ge=1, description="consecutive failures that open the circuit")
    reset_after: float = Field(10.0, gt=0, description="seconds an open circuit waits before a trial")

    @field_validator("base_url", mode="after")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value != EMBEDDED and not value.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url {value!r} must start with http:// or https:// (for example "
                "http://127.0.0.1:8000/v1), or be 'embedded' for the in-process model"
            )
        return value

    @model_validator(mode="after")
    def _sane_range(self) -> BackendSettings:
        if self.max_prompt_tokens is not None and self.max_prompt_tokens < self.min_prompt_tokens:
            raise ValueError(
                f"backend {self.label}: max_prompt_tokens ({self.max_prompt_tokens}) is below "
                f"min_prompt_tokens ({self.min_prompt_tokens})"
            )
        return self

    @property
    def label(self) -> str:
        return self.name or self.base_url
