"""A request's filter on its sources: domains and paths, recency, preferred sources, collections.

Domain and path entries (`search_domain_filter`, `source_preference`) are applied to the
retrieved hits, before the model sees them, so `[n]` markers still count the sources the
client gets. The indexes do not know URL hosts: retrieval is asked for a wider list, which is
then filtered and cut back to the requested size. Collections and the recency window are
applied inside both retrievers.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

from footnote.core.filters import SearchFilter
from footnote.core.hits import SearchHit
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams

RECENCY_SECONDS = {"hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400}
# How many more hits than asked for are fetched when a filter may drop some.
FILTER_WIDENING = 5


@dataclass(frozen=True)
class SourceFilter:
    """Which hits a request accepts and which it prefers.

    An entry matches a hit when it is the host of the document's URL or a parent domain of
    it, or a piece of the document's file path. `-entry` excludes; plain entries include.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    prefer: tuple[str, ...] = ()
    recency: str | None = None
    # The collections the request may search (those it names that the caller can read); None: all.
    collections: tuple[str, ...] | None = None

    @classmethod
    def parse(
        cls,
        domains: Sequence[str] | None,
        recency: str | None = None,
        prefer: Sequence[str] | None = None,
        collections: tuple[str, ...] | None = None,
    ) -> SourceFilter:
        entries = [entry.strip().lower() for entry in domains or () if entry.strip()]
        include = tuple(e for e in entries if not e.startswith("-"))
        exclude = tuple(e[1:].strip() for e in entries if e.startswith("-") and e[1:].strip())
        preferred = tuple(e.strip().lower() for e in prefer or () if e.strip())
        return cls(include, exclude, preferred, recency, collections)

    @property
    def widens(self) -> bool:
        """Whether retrieval is asked for a wider list: entries applied to its hits may drop some.
        Collections need no wider list: both retrievers keep to them themselves."""
        return bool(self.include or self.exclude or self.prefer or self.recency)

    def search_filter(self, now: float | None = None) -> SearchFilter | None:
        """The part both retrievers apply themselves: the collections, and the recency window on
        the source's mtime."""
        if not self.recency and self.collections is None:
            return None
        after = (now or time.time()) - RECENCY_SECONDS[self.recency] if self.recency else None
        return SearchFilter(modified_after=after, collections=self.collections)

    def apply(self, hits: list[SearchHit]) -> list[SearchHit]:
        """Domain and path entries, applied to the hits (URL hosts are not in the indexes)."""
        kept = [hit for hit in hits if self._accepts(hit)]
        if self.prefer:
            # A stable sort: preferred hits first, each group still in retrieval order.
            kept.sort(key=lambda hit: not any(_matches(entry, hit) for entry in self.prefer))
        return kept

    def _accepts(self, hit: SearchHit) -> bool:
        if self.include and not any(_matches(entry, hit) for entry in self.include):
            return False
        return not any(_matches(entry, hit) for entry in self.exclude)


def _matches(entry: str, hit: SearchHit) -> bool:
    host = (urlparse(hit.url).hostname or "") if hit.url else ""
    if host and (host == entry or host.endswith("." + entry)):
        return True
    return entry in hit.path.lower()


class FilteredRetriever(HybridRetriever):
    """The hybrid retriever with a request's `SourceFilter` applied to its hits."""

    def __init__(self, base: HybridRetriever, source_filter: SourceFilter) -> None:
        super().__init__(
            base.catalog,
            base.vectors,
            base.embedder,
            base.reranker,
            base.keyword_index,
            base.dense_languages,
            base.language_dense,
        )
        self.source_filter = source_filter

    def search(self, query: str, params: RetrievalParams | None = None) -> list[SearchHit]:
        params = params or RetrievalParams()
        if not self.source_filter.widens:
            filters = self.source_filter.search_filter() or params.filters
            return super().search(query, dataclasses.replace(params, filters=filters))
        deepest = max(params.keyword_candidates, params.dense_candidates, params.limit)
        wide = dataclasses.replace(
            params,
            limit=min(params.limit * FILTER_WIDENING, deepest),
            filters=self.source_filter.search_filter() or params.filters,
        )
        hits = self.source_filter.apply(super().search(query, wide))
        return hits[: params.limit]
