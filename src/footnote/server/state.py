"""What one server holds: the application, its models, the admission pools and the metrics."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import anyio
from fastapi import Depends, Request

from footnote.application import Application
from footnote.config import Settings
from footnote.core.collections import EVERYTHING, Access
from footnote.errors import FootnoteError, StoreUnavailable
from footnote.server.admission import AdmissionPool, DeadlinePool
from footnote.server.errors import ApiError
from footnote.server.metrics import Metrics
from footnote.server.scoring import ScoringHost

LoadState = Literal["idle", "loading", "ready", "failed"]
# Where `ApiKeyMiddleware` leaves the caller's `Access` in the request's scope state.
ACCESS_KEY = "footnote_access"
T = TypeVar("T")


class ModelHost:
    """Loads the application's models once.

    `Application` builds its models lazily and is not safe to build from two threads at
    once; every route reaches models through `retrieval()` or `generation()`, which load
    under a lock. (That one answer at a time uses an in-process LLM is the answer service's
    care: `AnswerService.model_lock`.)
    """

    def __init__(self, application: Application) -> None:
        self.application = application
        self._load_lock = threading.Lock()
        self.state: LoadState = "idle"
        self.error: str | None = None

    def retrieval(self) -> Application:
        """The application with its embedder and vector index loaded, and the index reconciled
        with the catalog once (blocking)."""
        with self._load_lock:
            return self._load(with_generator=False)

    def generation(self) -> Application:
        """The application with every model loaded (blocking)."""
        with self._load_lock:
            return self._load(with_generator=True)

    def _load(self, with_generator: bool) -> Application:
        app = self.application
        if self.state == "ready":
            return app
        try:
            app.embedder  # noqa: B018  (the properties load the models)
            app.vectors  # noqa: B018
            if not app.stores_reconciled:
                app.reconcile_stores()
            if with_generator:
                app.generator  # noqa: B018
                self.state = "ready"
        except StoreUnavailable:
            raise  # not a failed load: a 503 with Retry-After, and the next request tries again
        except FootnoteError as exc:
            # Whatever the core calls it (a missing file is a NotFoundError), for a client
            # it means the service cannot answer now.
            self.state, self.error = "failed", str(exc)
            raise ApiError(503, f"the models could not be loaded: {exc}", code="model_unavailable") from exc
        return app

    def preload(self) -> None:
        self.state = "loading"
        # A failure is recorded in `state` and `error`, and /readyz reports it.
        with suppress(ApiError):
            try:
                self.generation()
            except StoreUnavailable as exc:
                self.state, self.error = "failed", str(exc)  # the next request tries again

    def model_names(self) -> tuple[str, str]:
        """The LLM's and the embedder's names (loads the models if they are not yet)."""
        app = self.generation()
        return app.generator.name, app.embedder.name


@dataclass
class ServerState:
    settings: Settings
    models: ModelHost
    generation: DeadlinePool
    work: AdmissionPool
    metrics: Metrics
    executor: ThreadPoolExecutor
    scoring: ScoringHost
    ingest_lock: threading.Lock = field(default_factory=threading.Lock)
    started: float = field(default_factory=time.time)

    @property
    def application(self) -> Application:
        return self.models.application

    async def run_work(self, function: Callable[..., T], *args: Any) -> T:
        """Run blocking work (search, embedding, ingest) in a thread, admitted by the work pool."""
        slot = await self.work.acquire()
        try:
            # Not abandoned on cancel: the slot is held until the thread is really done.
            return await anyio.to_thread.run_sync(function, *args)
        finally:
            slot.release()


def server_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.footnote
    return state


def caller_access(request: Request) -> Access:
    """What the request's key opens (`ApiKeyMiddleware` decides it for every request)."""
    access: Access = request.scope.get("state", {}).get(ACCESS_KEY, EVERYTHING)
    return access


State = Annotated[ServerState, Depends(server_state)]
Caller = Annotated[Access, Depends(caller_access)]
