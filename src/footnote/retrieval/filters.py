"""Metadata filters applied inside both retrievers, so a filtered search still fills its list.

Path globs are SQLite GLOB patterns (`*` also crosses `/`, case-sensitive) on the
document path; a collection is a folder, so `/data/papers/*` selects it. The
keyword side filters in SQL; the dense side gets a Chroma `where` on the chunk
metadata stored at upsert (document_id, format, mtime), with path globs resolved
to document ids by the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SearchFilter:
    include_paths: tuple[str, ...] = ()  # keep documents whose path matches any of these globs
    exclude_paths: tuple[str, ...] = ()  # then drop those whose path matches any of these
    formats: tuple[str, ...] = ()  # markdown | text | html | pdf; empty means any
    modified_after: float | None = None  # source mtime >= this (Unix seconds)
    modified_before: float | None = None  # source mtime < this

    @property
    def active(self) -> bool:
        return bool(
            self.include_paths
            or self.exclude_paths
            or self.formats
            or self.modified_after is not None
            or self.modified_before is not None
        )

    @property
    def filters_paths(self) -> bool:
        return bool(self.include_paths or self.exclude_paths)

    def sql(self, documents: str = "d") -> tuple[str, list[object]]:
        """A WHERE fragment on the documents table aliased `documents`, and its parameters."""
        clauses: list[str] = []
        args: list[object] = []
        if self.include_paths:
            clauses.append("(" + " OR ".join(f"{documents}.path GLOB ?" for _ in self.include_paths) + ")")
            args.extend(self.include_paths)
        for pattern in self.exclude_paths:
            clauses.append(f"NOT {documents}.path GLOB ?")
            args.append(pattern)
        if self.formats:
            clauses.append(f"{documents}.format IN ({','.join('?' * len(self.formats))})")
            args.extend(self.formats)
        if self.modified_after is not None:
            clauses.append(f"{documents}.mtime >= ?")
            args.append(self.modified_after)
        if self.modified_before is not None:
            clauses.append(f"{documents}.mtime < ?")
            args.append(self.modified_before)
        return " AND ".join(clauses) or "1", args

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
