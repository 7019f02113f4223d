"""What a search returns: a chunk with where it came from and how it was found."""

from __future__ import annotations

from dataclasses import dataclass

from footnote.core.span import Span


@dataclass
class SearchHit:
    """One retrieved chunk. `start`/`end` are a character span into the document text.

    The span's fields stay flat here: a hit's fields are the JSON of search results, sources
    and the answer cache, which keep their shape; `span` gives them as one `Span`."""

    chunk_id: int
    document_id: int
    path: str
    title: str
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    score: float = 0.0  # fused score; higher is better
    keyword_rank: int | None = None  # 1-based rank in the keyword list, None when absent there
    keyword_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    url: str | None = None
    rerank_score: float | None = None  # second-stage score, None when not reranked
    language: str = ""  # the chunk's language as detected at ingest (`footnote.core.language`)

    @property
    def span(self) -> Span:
        return Span(self.start, self.end, self.heading_path, self.page)

    @property
    def location(self) -> str:
        """Human-readable place of the chunk: path, page and heading path."""
        return self.span.location(self.path)
