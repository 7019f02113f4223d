"""What a search returns, defined in `footnote.core.hits`."""

from footnote.core.hits import SearchHit

__all__ = ["SearchHit"]
