"""What every evaluation set has in common: JSONL records read with their line numbers, and one
error kind that names the file, the line and what a record needs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from footnote.errors import FootnoteError


class DatasetError(FootnoteError):
    """An evaluation set is missing a file or holds a malformed record."""


class AnswerDatasetError(DatasetError):
    """An answer-evaluation file is missing or holds a malformed record."""


class DocSetError(DatasetError):
    """A document question set is missing a part or holds a malformed item."""


def read_jsonl(
    path: Path, error: type[DatasetError] = DatasetError, skip: int = 0
) -> Iterator[tuple[int, Any]]:
    """(line number, record) of each non-blank line of `path` after the first `skip` (passed over
    unread); a line that is not JSON is an `error` naming it. Lines are read as they are asked for."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if skip > 0:
                skip -= 1
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path} line {number} is not JSON ({exc.msg})") from exc
            yield number, record


@contextmanager
def record_fields(path: Path, number: int, needs: str, error: type[DatasetError]) -> Iterator[None]:
    """A missing or mistyped field of the record at line `number` becomes an `error` saying what
    records need (`needs`)."""
    try:
        yield
    except (KeyError, TypeError) as exc:
        raise error(f"{path} line {number}: {needs} ({exc})") from exc
