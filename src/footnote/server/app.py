"""The HTTP API: `create_server(settings)` builds a FastAPI app around one `Application`,
with the Model Context Protocol at `/mcp`.

Tests build isolated servers on a temporary `FOOTNOTE_HOME` with test-double models;
`footnote serve` runs one under uvicorn.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from footnote import __version__
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.errors import OverloadedError
from footnote.server.admission import AdmissionPool, DeadlinePool
from footnote.server.errors import ERROR_RESPONSES, ApiError, install_error_handlers
from footnote.server.guards import OPEN_PATHS, ApiKeyMiddleware, BodyLimitMiddleware, ScopedKeys
from footnote.server.mcp import http_route, mcp_server, serving_http
from footnote.server.metrics import Metrics, MetricsMiddleware
from footnote.server.request_class import objectives
from footnote.server.routes import route_modules
from footnote.server.schemas.chat import ChatCompletionChunk
from footnote.server.scoring import ScoringHost
from footnote.server.state import ModelHost, ServerState

UPLOAD_PATHS = ("/v1/documents",)


def build_state(settings: Settings, application: Application) -> ServerState:
    timeout = settings.request_timeout
    state = ServerState(
        settings=settings,
        models=ModelHost(application),
        generation=DeadlinePool(
            "generation", settings.max_concurrency, settings.max_queue, timeout, objectives(settings)
        ),
        work=AdmissionPool("work", settings.max_work_concurrency, settings.max_queue, timeout),
        metrics=Metrics(),
        executor=ThreadPoolExecutor(settings.max_concurrency, thread_name_prefix="footnote-answer"),
        scoring=ScoringHost(settings),
    )
    for pool in (state.generation, state.work):
        state.metrics.watch_pool(pool)
    state.metrics.watch_deadlines(state.generation)
    # Built here, before any request: every thread then shares one answer cache and model lock.
    application.answers  # noqa: B018
    application.observe_stores(state.metrics.observe_store)
    state.metrics.watch_index(lambda: len(application.documents()), application.chunk_count)
    return state


def create_server(settings: Settings | None = None, application: Application | None = None) -> FastAPI:
    """The API app. Without `application`, one is created from `settings` (models load lazily)."""
    application = application or create_app(settings)
    settings = settings or application.settings
    state = build_state(settings, application)
    mcp = mcp_server(state)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.preload_models and state.models.state == "idle":
            threading.Thread(target=state.models.preload, name="footnote-preload", daemon=True).start()
        application.keep_keyword_index()
        async with serving_http(mcp, settings):
            yield
        state.scoring.close()

    server = FastAPI(
        title="footnote",
        version=__version__,
        summary="Cited, checked answers from your own documents: OpenAI and Perplexity Sonar compatible.",
        lifespan=lifespan,
        redoc_url=None,
    )
    server.state.footnote = state
    for module in route_modules():
        shared_errors = getattr(module, "SHARED_ERRORS", True)
        server.include_router(module.router, responses=ERROR_RESPONSES if shared_errors else None)
    server.router.routes.append(http_route(mcp))
    install_error_handlers(server)
    server.add_exception_handler(OverloadedError, _on_overloaded)
    # Added innermost first: metrics see everything, keys are checked before any body is read.
    server.add_middleware(
        BodyLimitMiddleware,
        limit=settings.max_body_bytes,
        upload_limit=settings.max_upload_bytes,
        upload_paths=UPLOAD_PATHS,
    )
    keys = [key.get_secret_value() for key in settings.api_keys]
    server.add_middleware(ApiKeyMiddleware, keys=keys, scoped=ScopedKeys(application))
    server.add_middleware(MetricsMiddleware, metrics=state.metrics)
    server.openapi = lambda: _openapi(server, secured=bool(keys))  # type: ignore[method-assign]
    return server


async def _on_overloaded(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, OverloadedError)
    retry = {"Retry-After": str(exc.retry_after)}
    return ApiError(429, str(exc), code="overloaded", headers=retry).response()


def _add_schema(spec: dict[str, Any], model: type[BaseModel]) -> None:
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(schema.pop("$defs", {}))
    schemas[model.__name__] = schema


def _openapi(server: FastAPI, secured: bool) -> dict[str, Any]:
    """The generated spec, plus the bearer scheme on every protected route when keys are set."""
    if server.openapi_schema is None:
        spec = get_openapi(
            title=server.title, version=server.version, summary=server.summary, routes=server.routes
        )
        _add_schema(spec, ChatCompletionChunk)  # named by the streaming response's event schema
        if secured:
            spec.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"}
            }
            for path, operations in spec["paths"].items():
                if path not in OPEN_PATHS:
                    for operation in operations.values():
                        operation["security"] = [{"bearer": []}]
        server.openapi_schema = spec
    return server.openapi_schema
