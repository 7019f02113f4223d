"""The bodies of /v1/embeddings and /v1/models, as the OpenAI SDK expects them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from footnote.server.schemas import Text

EmbedText = Annotated[Text, Field(min_length=1, max_length=32_000)]
MAX_INPUTS = 256


class EmbeddingRequest(BaseModel):
    input: (
        EmbedText
        | Annotated[list[EmbedText], Field(min_length=1, max_length=MAX_INPUTS)]
        | Annotated[list[int], Field(min_length=1, max_length=8192)]
        | Annotated[list[list[int]], Field(min_length=1, max_length=MAX_INPUTS)]
    )
    model: str | None = Field(
        None, max_length=256, description="accepted and ignored: one embedder is served"
    )
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1, le=65536, description="must equal the embedder's dimension")


class Embedding(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str = Field(description="floats, or little-endian float32 in base64")


class EmbeddingUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingResponse(BaseModel):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingUsage


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    max_model_len: int | None = Field(
        None, description="the LLM's longest scoring window in tokens (as vLLM reports it)"
    )


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]
