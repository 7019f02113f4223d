"""POST /v1/embeddings and GET /v1/models, as the OpenAI SDK expects them."""

from __future__ import annotations

import base64
import struct

from fastapi import APIRouter

from footnote.models.base import Vector
from footnote.server.errors import ApiError
from footnote.server.schemas.embeddings import (
    Embedding,
    EmbeddingRequest,
    EmbeddingResponse,
    EmbeddingUsage,
    Model,
    ModelList,
)
from footnote.server.state import ServerState, State

router = APIRouter(tags=["models"])


def _texts(body: EmbeddingRequest) -> list[str]:
    if isinstance(body.input, str):
        return [body.input]
    if all(isinstance(item, str) for item in body.input):
        return [item for item in body.input if isinstance(item, str)]
    raise ApiError(
        400,
        "token arrays are not supported: send text (in LangChain, set check_embedding_ctx_length=False)",
        param="input",
    )


def _encode(vector: Vector, encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
    return vector


def _embed(state: ServerState, texts: list[str], dimensions: int | None) -> tuple[str, list[Vector], int]:
    embedder = state.models.retrieval().embedder
    if dimensions is not None and dimensions != embedder.dimension:
        raise ApiError(
            400,
            f"dimensions={dimensions} is not available: {embedder.name} gives {embedder.dimension}",
            param="dimensions",
        )
    tokens = sum(embedder.count_tokens(text) for text in texts)
    return embedder.name, embedder.embed_many(texts, batch_size=state.settings.embed_batch_size), tokens


@router.post("/v1/embeddings", response_model=EmbeddingResponse)
async def embeddings(body: EmbeddingRequest, state: State) -> EmbeddingResponse:
    """Vectors from the embedder footnote indexes with (L2-normalised)."""
    texts = _texts(body)
    name, vectors, tokens = await state.run_work(_embed, state, texts, body.dimensions)
    data = [
        Embedding(index=index, embedding=_encode(vector, body.encoding_format))
        for index, vector in enumerate(vectors)
    ]
    usage = EmbeddingUsage(prompt_tokens=tokens, total_tokens=tokens)
    return EmbeddingResponse(data=data, model=name, usage=usage)


async def _models(state: ServerState) -> list[Model]:
    llm, embedder = await state.run_work(state.models.model_names)
    created = int(state.started)
    window = state.settings.score_context_tokens
    return [
        Model(id=llm, created=created, owned_by="footnote", max_model_len=window),
        Model(id=embedder, created=created, owned_by="footnote"),
    ]


@router.get("/v1/models", response_model=ModelList)
async def list_models(state: State) -> ModelList:
    """The LLM that answers and the embedder that indexes."""
    return ModelList(data=await _models(state))


@router.get("/v1/models/{model_id:path}", response_model=Model)
async def get_model(model_id: str, state: State) -> Model:
    for model in await _models(state):
        if model.id == model_id:
            return model
    raise ApiError(404, f"no model '{model_id}'; GET /v1/models lists them", param="model")
