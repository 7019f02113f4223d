"""What stands in front of every route: API keys and the request body cap.

Both are plain ASGI middleware, so a request without a valid key, or with a body
over the cap, is refused before any of its body is read or parsed.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from footnote.config import Settings
from footnote.errors import ConfigError
from footnote.server.errors import ApiError
from footnote.server.routes.web import WEB_PATHS

# Probes and the API description stay reachable without a key.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect"}) | WEB_PATHS
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


class ApiKeyMiddleware:
    """Requires `Authorization: Bearer <key>` matching one of the configured keys."""

    def __init__(self, app: ASGIApp, keys: Iterable[str]) -> None:
        self.app = app
        self._keys = [key.encode("utf-8") for key in keys]

    def _authorized(self, headers: Headers) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        presented = token.strip().encode("utf-8")
        # Compare against every key, in constant time each, so timing reveals nothing.
        matches = [hmac.compare_digest(presented, key) for key in self._keys]
        return any(matches)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._keys or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._authorized(Headers(scope=scope)):
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
