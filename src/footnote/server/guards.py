"""What stands in front of every route: API keys (admin and scoped) and the request body cap.

Both are plain ASGI middleware, so a request without a valid key, or with a body
over the cap, is refused before any of its body is read or parsed.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import threading
import time
from collections.abc import Iterable

import anyio
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from footnote.application import Application
from footnote.config import Settings
from footnote.core.collections import EVERYTHING, Access
from footnote.errors import ConfigError, StoreUnavailable
from footnote.server.errors import ApiError
from footnote.server.routes.web import WEB_PATHS
from footnote.server.state import ACCESS_KEY

# Probes and the API description stay reachable without a key.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect"}) | WEB_PATHS
# How long a scoped key's look-up is trusted before the catalog is asked again.
KEY_CACHE_SECONDS = 2.0
# Distinct presented keys remembered at most (wrong ones too); past it the memory starts over.
MAX_REMEMBERED_KEYS = 10_000
# Room for the multipart boundaries and part headers around an uploaded file.
MULTIPART_OVERHEAD = 64 * 1024


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: 127.0.0.0/8, ::1 and `localhost`."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name may resolve anywhere


def check_bind(settings: Settings) -> None:
    """Refuse to serve beyond this machine without an API key."""
    if not is_loopback(settings.host) and not settings.api_keys:
        raise ConfigError(
            f"refusing to listen on {settings.host} without an API key: anyone who can reach it could "
            "use it; pass --api-key (or set FOOTNOTE_API_KEYS), or bind 127.0.0.1"
        )


class ScopedKeys:
    """The scoped keys the catalog holds, looked up by hash and remembered for `ttl` seconds, so
    that a request costs no catalog query while a key made or revoked on any replica counts
    within that time."""

    def __init__(self, application: Application, ttl: float = KEY_CACHE_SECONDS) -> None:
        self.application = application
        self.ttl = ttl
        self._lock = threading.Lock()
        self._any: tuple[float, bool] = (-math.inf, False)
        self._found: dict[str, tuple[float, Access | None]] = {}

    def any(self) -> bool:
        """Whether the catalog holds any scoped key (a server with one needs a key for everything).
        While the catalog cannot be reached, what it last said holds."""
        now = time.monotonic()
        with self._lock:
            checked, held = self._any
        if now - checked < self.ttl:
            return held
        try:
            held = self.application.has_scoped_keys()
        except StoreUnavailable:
            if checked == -math.inf:
                raise  # never asked: nothing to go on
            return held
        with self._lock:
            self._any = (now, held)
        return held

    def access(self, presented: str) -> Access | None:
        """What the key `presented` opens. While the catalog cannot be reached, what it last said
        of this key holds; a key it was never asked about raises StoreUnavailable."""
        now = time.monotonic()
        with self._lock:
            checked, found = self._found.get(presented, (-math.inf, None))
        if now - checked < self.ttl:
            return found
        try:
            found = self.application.key_access(presented)
        except StoreUnavailable:
            if checked == -math.inf:
                raise
            return found
        with self._lock:
            if len(self._found) > MAX_REMEMBERED_KEYS:
                self._found.clear()
            self._found[presented] = (now, found)
        return found


class ApiKeyMiddleware:
    """Requires `Authorization: Bearer <key>`: one of the configured admin keys (which open
    every collection) or a scoped key from the catalog (`footnote keys create`). Without either
    kind of key, every request is let through with access to everything. The caller's `Access`
    is left in the request's scope state for the routes."""

    def __init__(self, app: ASGIApp, keys: Iterable[str], scoped: ScopedKeys | None = None) -> None:
        self.app = app
        self._keys = [key.encode("utf-8") for key in keys]
        self._scoped = scoped

    def _admin(self, presented: bytes) -> bool:
        # Compare against every key, in constant time each, so timing reveals nothing.
        matches = [hmac.compare_digest(presented, key) for key in self._keys]
        return any(matches)

    def _access(self, headers: Headers) -> Access | None:
        """What the request's key opens; None for a missing or wrong key (blocking: may ask the
        catalog)."""
        if not self._keys and (self._scoped is None or not self._scoped.any()):
            return EVERYTHING
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        presented = token.strip()
        if self._admin(presented.encode("utf-8")):
            return EVERYTHING
        return self._scoped.access(presented) if self._scoped is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        try:
            access = await anyio.to_thread.run_sync(self._access, Headers(scope=scope))
        except StoreUnavailable as exc:
            # Whether the key opens anything is the catalog's to say: without it, nothing is served.
            retry = {"Retry-After": str(exc.retry_after)}
            response = ApiError(503, str(exc), code="store_unavailable", headers=retry).response()
            await response(scope, receive, send)
            return
        if access is not None:
            scope.setdefault("state", {})[ACCESS_KEY] = access
            await self.app(scope, receive, send)
            return
        response = ApiError(
            401,
            "missing or wrong API key; send the header `Authorization: Bearer <key>`",
            code="invalid_api_key",
            headers={"WWW-Authenticate": "Bearer"},
        ).response()
        await response(scope, receive, send)


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=f"the request body is over the {limit:,}-byte limit")


class BodyLimitMiddleware:
    """Caps request bodies: by Content-Length up front, and by counting what arrives."""

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int, upload_paths: Iterable[str]) -> None:
        self.app = app
        self.limit = limit
        self.upload_limit = upload_limit + MULTIPART_OVERHEAD
        self.upload_paths = frozenset(upload_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.upload_limit if scope["path"] in self.upload_paths else self.limit
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            status = 413 if declared.isdigit() else 400
            message = (
                f"the request body is over the {limit:,}-byte limit"
                if status == 413
                else ("the Content-Length header is not a number")
            )
            await ApiError(status, message).response()(scope, receive, send)
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException so the framework passes it on untouched as a 413.
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, counted_receive, send)
