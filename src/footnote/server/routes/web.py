"""The web interface: one page and its script and style, shipped inside the package.

The page talks to the same `/v1` API every other client uses, so these routes only
serve files. They are left out of the OpenAPI description and need no API key: the
page asks for the key itself and sends it with each API call.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter
from starlette.responses import Response

from footnote.server.errors import ApiError

router = APIRouter(include_in_schema=False)

ASSETS = {
    "i18n.js": "text/javascript",
    "app.js": "text/javascript",
    "answer.js": "text/javascript",
    "library.js": "text/javascript",
    "app.css": "text/css",
}
# Every file the page loads, as the API key middleware must let them through.
WEB_PATHS = frozenset({"/", *(f"/ui/{name}" for name in ASSETS)})
# Nothing is loaded from anywhere but this server: no CDN, font or image host.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@cache
def asset(name: str) -> bytes:
    return files("footnote.server.web").joinpath(name).read_bytes()


def _file(name: str, media_type: str) -> Response:
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}
    return Response(asset(name), media_type=media_type, headers=headers)


@router.get("/")
async def page() -> Response:
    return _file("index.html", "text/html; charset=utf-8")


@router.get("/ui/{name}")
async def web_asset(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise ApiError(404, f"no web asset {name!r}; the page loads {', '.join(sorted(ASSETS))}")
    return _file(name, f"{media_type}; charset=utf-8")
