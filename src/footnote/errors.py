"""Errors that say what went wrong and how to fix it.

Every message names the thing at fault (a file, a field, a model) and the fix.
Edges (CLI, HTTP) translate these into one clear line or an error object;
anything that is not a FootnoteError is a bug and is allowed to propagate.
"""

from __future__ import annotations

from pathlib import Path


class FootnoteError(Exception):
    """Base class of every error footnote raises on purpose."""


class ConfigError(FootnoteError):
    """A setting is missing or has a value footnote cannot use."""


class ModelError(FootnoteError):
    """A model cannot be found or loaded."""


class ModelIntegrityError(ModelError):
    """A model file does not match its pinned SHA-256; it is never loaded."""

    def __init__(self, path: Path, expected: str, actual: str, fix: str) -> None:
        self.path = path
        self.expected = expected
        self.actual = actual
        super().__init__(f"model file sha256 mismatch for {path}: expected {expected}, got {actual}; {fix}")


class LoaderError(FootnoteError):
    """A file could not be turned into a document."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class UnsupportedFormatError(LoaderError):
    """No loader handles this kind of file."""


class StoreError(FootnoteError):
    """The catalog or the vector index refused an operation."""


class StoreUnavailable(StoreError):
    """A shared store (the PostgreSQL catalog, the Chroma server) cannot be reached now.

    `setting` names the setting holding `url` (shown without its password); the server answers
    503 with `Retry-After: retry_after` rather than failing the request as a bug.
    """

    def __init__(self, setting: str, url: str, problem: str, retry_after: int = 5) -> None:
        super().__init__(f"{setting}={url}: {problem}")
        self.setting = setting
        self.url = url
        self.problem = problem
        self.retry_after = retry_after


class NotFoundError(FootnoteError):
    """A document, model or other named thing does not exist."""


class ForbiddenError(FootnoteError):
    """The caller's key does not allow this (writing a collection it may only read)."""


class QueryError(FootnoteError):
    """A question or search query cannot be answered as given."""


class OverloadedError(FootnoteError):
    """Too much work is waiting: the request is refused at once; retry after `retry_after` seconds."""

    def __init__(self, pool: str, retry_after: int) -> None:
        super().__init__(f"the server is busy ({pool}); retry after {retry_after} s")
        self.pool = pool
        self.retry_after = retry_after
