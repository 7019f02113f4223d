"""GET /healthz (the process answers), /readyz (models loaded) and /metrics (Prometheus)."""

from __future__ import annotations

from typing import Any, Literal

import anyio
from fastapi import APIRouter
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel
from starlette.responses import Response

from footnote.server.state import State

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "loading", "failed"]
    detail: str | None = None


@router.get("/healthz", response_model=Health)
async def healthz() -> dict[str, Any]:
    """Liveness: 200 while the process serves requests. Restart it when this fails."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "Models still loading, or failed to load"}},
)
async def readyz(state: State) -> JSONResponse:
    """Readiness: 200 once the models are loaded; 503 before, or when loading failed."""
    host = state.models
    # Without preloading, models load on first use: the server is ready as soon as it serves.
    if host.state == "ready" or (host.state == "idle" and not state.settings.preload_models):
        return JSONResponse({"status": "ready", "detail": None})
    status = "failed" if host.state == "failed" else "loading"
    return JSONResponse({"status": status, "detail": host.error}, status_code=503)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(state: State) -> Response:
    """Prometheus text format: requests, latency, time to first token, tokens, queues, index size."""
    body = await anyio.to_thread.run_sync(state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
