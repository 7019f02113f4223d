"""footnote: a self-hosted answer engine whose every claim carries a checked footnote."""

__version__ = "0.1.0"
