"""An answer's sources as a client is shown them: each document's URI, title, dates and snippet.

`citations[n-1]` is what `[n]` in the answer refers to; a described source is what the APIs
show as one search result (Perplexity's `search_results`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from footnote.core.hits import SearchHit

if TYPE_CHECKING:
    from footnote.application.app import Application


def source_uri(path: str, url: str | None) -> str:
    """The document's own URL when it has one (an HTML canonical link), else its file:// URI."""
    if url:
        return url
    try:
        return Path(path).as_uri()
    except ValueError:  # not an absolute path
        return path


@dataclass(frozen=True)
class SourceDescription:
    """One source: `date` and `last_updated` are the day of the file's mtime."""

    title: str
    url: str
    date: str | None
    last_updated: str | None
    snippet: str


@dataclass(frozen=True)
class DescribedSources:
    """Sources as an answer shows them: `citations[n-1]` is what `[n]` refers to."""

    citations: list[str]  # the documents' URIs
    results: list[SourceDescription]


def describe_sources(app: Application, hits: Sequence[SearchHit], snippet_chars: int = 0) -> DescribedSources:
    """The URIs and descriptions of `hits`, each snippet cut to `snippet_chars` at a word (0: whole;
    blocking: reads the catalog)."""
    modified = _modified(app, hits)
    citations = [source_uri(hit.path, hit.url) for hit in hits]
    results = [_description(hit, modified.get(hit.document_id), snippet_chars) for hit in hits]
    return DescribedSources(citations, results)


def _day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d")


def _description(hit: SearchHit, modified: float | None, snippet_chars: int) -> SourceDescription:
    day = _day(modified) if modified is not None else None
    snippet = hit.text.strip()
    if snippet_chars and len(snippet) > snippet_chars:
        snippet = snippet[:snippet_chars].rsplit(" ", 1)[0] + "…"
    title = hit.title or Path(hit.path).name
    return SourceDescription(title, source_uri(hit.path, hit.url), day, day, snippet)


def _modified(app: Application, hits: Sequence[SearchHit]) -> dict[int, float]:
    """The mtime of each hit's document that is still in the catalog."""
    found: dict[int, float] = {}
    for document_id in {hit.document_id for hit in hits}:
        record = app.document(document_id)
        if record is not None:
            found[document_id] = record.mtime
    return found
