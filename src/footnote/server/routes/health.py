"""GET /healthz (the process answers), /readyz (models loaded, stores answering) and /metrics."""

from __future__ import annotations

import anyio
from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.responses import Response

from footnote.application import StoreHealth
from footnote.server.schemas.health import Health, Readiness, StoreStatus
from footnote.server.state import ServerState, State

router = APIRouter(tags=["health"])
# Probes and metrics answer no API request: they show none of the shared error responses.
SHARED_ERRORS = False


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """Liveness: 200 while the process serves requests. Restart it when this fails."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={
        503: {"model": Readiness, "description": "Models loading or failed, or a store not answering"}
    },
)
async def readyz(state: State, response: Response) -> Readiness:
    """Readiness: 200 once the models are loaded and every store answers; 503 before, when
    loading failed, or while the catalog or the vector index cannot be reached."""
    readiness = _readiness(state, await anyio.to_thread.run_sync(state.application.store_health))
    if readiness.status != "ready":
        response.status_code = 503
    return readiness


def _readiness(state: ServerState, health: dict[str, StoreHealth]) -> Readiness:
    stores = {
        name: StoreStatus(kind=h.kind, status="unavailable" if h.error else "ok", detail=h.error)
        for name, h in health.items()
    }
    down = [h.error for h in health.values() if h.error]
    if down:
        return Readiness(status="unavailable", detail=down[0], stores=stores)
    host = state.models
    # Without preloading, models load on first use: the server is ready as soon as it serves.
    if host.state == "ready" or (host.state == "idle" and not state.settings.preload_models):
        return Readiness(status="ready", detail=None, stores=stores)
    status = "failed" if host.state == "failed" else "loading"
    return Readiness(status=status, detail=host.error, stores=stores)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(state: State) -> Response:
    """Prometheus text format: requests, latency, time to first token, tokens, queues, index size."""
    body = await anyio.to_thread.run_sync(state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
