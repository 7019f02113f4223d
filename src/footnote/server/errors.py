"""Every failure leaves as an OpenAI-style error object with the right status.

`{"error": {"message", "type", "param", "code"}}`: the shape the `openai` SDK,
LangChain and LiteLLM already parse. Bad input is always a 4xx; a 500 means a bug.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from footnote.errors import (
    FootnoteError,
    ForbiddenError,
    LoaderError,
    ModelError,
    NotFoundError,
    OverloadedError,
    QueryError,
    StoreUnavailable,
    UnsupportedFormatError,
)

log = logging.getLogger("footnote.server")

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "service_unavailable",
    504: "timeout_error",
}


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class ApiError(Exception):
    """An error sent as an OpenAI error object: raised on purpose by a route, or made by a
    handler for any other failure."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> ErrorResponse:
        kind = ERROR_TYPES.get(self.status, "server_error" if self.status >= 500 else "invalid_request_error")
        return ErrorResponse(
            error=ErrorDetail(message=self.message, type=kind, param=self.param, code=self.code)
        )

    def response(self) -> JSONResponse:
        return JSONResponse(self.body().model_dump(), status_code=self.status, headers=self.headers)


# The status of each error the core raises on purpose; the first that matches wins.
STATUS_OF_ERROR: tuple[tuple[type[FootnoteError], int], ...] = (
    (NotFoundError, 404),
    (ForbiddenError, 403),
    (UnsupportedFormatError, 415),
    (LoaderError, 422),
    (QueryError, 400),
    (ModelError, 503),
    (OverloadedError, 429),
    (StoreUnavailable, 503),
)


def status_of(error: FootnoteError) -> int:
    """The HTTP status for an error the core raised on purpose (500: one it did not mean)."""
    return next((status for kind, status in STATUS_OF_ERROR if isinstance(error, kind)), 500)


# Pydantic puts the union member tried into `loc` ("content", "str", ...): not a field.
_NOT_FIELDS = frozenset({"body", "query", "path", "str", "int", "float", "bool", "list", "dict", "none"})


def _is_field(part: object) -> bool:
    if isinstance(part, int):
        return True
    text = str(part)
    return text.isidentifier() and text.lower() not in _NOT_FIELDS


def _validation_message(errors: list[Any]) -> tuple[int, str, str | None]:
    first: dict[str, Any] = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    if first.get("type") == "json_invalid":
        detail = (first.get("ctx") or {}).get("error", "malformed JSON")
        return 400, f"the request body is not valid JSON ({detail})", None
    location = [str(part) for part in first.get("loc", ()) if _is_field(part)]
    param = ".".join(location) or None
    if param is None and tuple(first.get("loc", ())) == ("body",):
        return 400, "the request body must be a JSON object, sent as Content-Type: application/json", None
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    where = f"{param}: " if param else ""
    return 422, f"{where}{first.get('msg', 'invalid value')}{more}", param


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    status, message, param = _validation_message(list(exc.errors()))
    return ApiError(status, message, param=param, code="invalid_value" if status == 422 else None).response()


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    messages = {
        404: f"no route {request.url.path}; GET /openapi.json lists the routes",
        405: f"{request.method} is not allowed on {request.url.path}",
        413: "the request body is too large",
    }
    message = messages.get(exc.status_code) or str(exc.detail)
    return ApiError(exc.status_code, message, headers=dict(exc.headers or {})).response()


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _on_footnote_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, FootnoteError)
    status = status_of(exc)
    if status >= 500:
        log.error("request failed: %s", exc, extra={"path": request.url.path})
    if isinstance(exc, StoreUnavailable):
        retry = {"Retry-After": str(exc.retry_after)}
        return ApiError(status, str(exc), code="store_unavailable", headers=retry).response()
    return ApiError(status, str(exc)).response()


async def _on_unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return ApiError(500, "internal server error; the server log has the details").response()


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(FootnoteError, _on_footnote_error)
    app.add_exception_handler(Exception, _on_unexpected_error)


# Declared on every route so the OpenAPI spec names each status a client can get.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": description}
    for status, description in {
        400: "Malformed request",
        401: "Missing or wrong API key",
        404: "Not found",
        413: "Request body too large",
        422: "Invalid field value",
        429: "Overloaded; retry after the Retry-After header's seconds",
        500: "Server error",
        503: "Models or a shared store not available; retry after the Retry-After header's seconds",
        504: "Timed out",
    }.items()
}
