"""Metadata filters applied inside both retrievers, so a filtered search still fills its list.

Path globs are SQLite GLOB patterns (`*` also crosses `/`, case-sensitive) on the
document path, so `/data/papers/*` selects a folder; `collections` selects documents by the
collection they were ingested into (`footnote.core.collections`). The
keyword side filters in SQL; the dense side gets a Chroma `where` on the chunk
metadata stored at upsert (document_id, format, mtime), with path globs and
collections resolved to document ids by the catalog.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from footnote.core.collections import check_collection
from footnote.core.formats import document_formats
from footnote.errors import QueryError


@dataclass(frozen=True)
class SearchFilter:
    include_paths: tuple[str, ...] = ()  # keep documents whose path matches any of these globs
    exclude_paths: tuple[str, ...] = ()  # then drop those whose path matches any of these
    formats: tuple[str, ...] = ()  # names from `document_formats()`; empty means any
    modified_after: float | None = None  # source mtime >= this (Unix seconds)
    modified_before: float | None = None  # source mtime < this
    collections: tuple[str, ...] | None = None  # keep documents of these collections; None: any

    @property
    def active(self) -> bool:
        return bool(
            self.collections is not None
            or self.include_paths
            or self.exclude_paths
            or self.formats
            or self.modified_after is not None
            or self.modified_before is not None
        )

    @property
    def filters_paths(self) -> bool:
        """Whether the filter needs the catalog to say which documents it lets through (the
        vector index knows neither paths nor collections)."""
        return bool(self.include_paths or self.exclude_paths or self.collections is not None)

    def sql(self, documents: str = "d", postgres: bool = False) -> tuple[str, list[object]]:
        """A WHERE fragment on the documents table aliased `documents`, and its parameters;
        in PostgreSQL's dialect with `postgres` (which matches globs as regular expressions)."""
        mark = "%s" if postgres else "?"
        matches = f"{documents}.path ~ {mark}" if postgres else f"{documents}.path GLOB {mark}"
        glob = glob_regex if postgres else str
        clauses: list[str] = []
        args: list[object] = []
        if self.include_paths:
            clauses.append("(" + " OR ".join(matches for _ in self.include_paths) + ")")
            args.extend(glob(pattern) for pattern in self.include_paths)
        for pattern in self.exclude_paths:
            clauses.append(f"NOT {matches}")
            args.append(glob(pattern))
        if self.collections is not None:
            marks = ",".join([mark] * len(self.collections)) or "NULL"
            clauses.append(f"{documents}.collection IN ({marks})")
            args.extend(self.collections)
        if self.formats:
            clauses.append(f"{documents}.format IN ({','.join([mark] * len(self.formats))})")
            args.extend(self.formats)
        if self.modified_after is not None:
            clauses.append(f"{documents}.mtime >= {mark}")
            args.append(self.modified_after)
        if self.modified_before is not None:
            clauses.append(f"{documents}.mtime < {mark}")
            args.append(self.modified_before)
        return " AND ".join(clauses) or ("TRUE" if postgres else "1"), args

    def chroma_where(self, document_ids: Sequence[int] | None) -> dict[str, Any] | None:
        """The Chroma `where`; `document_ids` are the documents the path globs allow."""
        clauses: list[dict[str, Any]] = []
        if document_ids is not None:
            clauses.append({"document_id": {"$in": list(document_ids) or [-1]}})
        if self.formats:
            clauses.append({"format": {"$in": list(self.formats)}})
        if self.modified_after is not None:
            clauses.append({"mtime": {"$gte": self.modified_after}})
        if self.modified_before is not None:
            clauses.append({"mtime": {"$lt": self.modified_before}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def glob_regex(pattern: str) -> str:
    """A regular expression matching what SQLite's GLOB `pattern` matches (whole string,
    case-sensitive; `*` and `?` cross `/`; `[...]` and `[^...]` are character classes)."""
    out = ["^"]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        close = pattern.find("]", index + 2) if char == "[" else -1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif close != -1:
            body = pattern[index + 1 : close]
            negated = body.startswith("^")
            body = body[1:] if negated else body
            out.append("[" + ("^" if negated else "") + body.replace("\\", "\\\\") + "]")
            index = close
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out) + "$"


def parse_date(value: str, option: str = "date") -> float:
    """Unix seconds of an ISO date or date-time; one without a zone is local time."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise QueryError(
            f"{option} '{value}' is not an ISO date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM]"
        ) from None
    return moment.timestamp()


def build_filter(
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    formats: Sequence[str] = (),
    after: str | None = None,
    before: str | None = None,
    collections: Sequence[str] = (),
) -> SearchFilter | None:
    """A SearchFilter from user-facing options (dates as ISO text), checked; None when nothing is set."""
    known = document_formats()
    unknown = [name for name in formats if name not in known]
    if unknown:
        raise QueryError(f"unknown format '{unknown[0]}'; use one of {', '.join(known)}")
    search_filter = SearchFilter(
        include_paths=tuple(include),
        exclude_paths=tuple(exclude),
        formats=tuple(dict.fromkeys(formats)),
        modified_after=parse_date(after, "--after") if after is not None else None,
        modified_before=parse_date(before, "--before") if before is not None else None,
        collections=tuple(dict.fromkeys(map(check_collection, collections))) if collections else None,
    )
    after_s, before_s = search_filter.modified_after, search_filter.modified_before
    if after_s is not None and before_s is not None and after_s >= before_s:
        raise QueryError(f"--after {after} is not before --before {before}; nothing could match")
    return search_filter if search_filter.active else None
