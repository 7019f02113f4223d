"""What can go wrong with a generation backend, split by what the router does about it."""

from __future__ import annotations

from footnote.errors import ModelError, OverloadedError


class BackendError(ModelError):
    """A backend refused or broke a request in a way another backend would not fix."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status the server answered with, when it answered one
        self.retry_after = retry_after  # seconds, from a Retry-After header given in seconds


class BackendUnavailable(BackendError):
    """A backend is down, broken or stalled: the router fails over to the next one."""


class BackendTimeout(BackendUnavailable):
    """The request's deadline passed while waiting for, or reading from, a backend."""


class BackendOverloaded(OverloadedError):
    """A backend's queue is full: the request is refused at once (HTTP 429)."""
