"""The token-scorer protocols, defined in `footnote.models.scoring` (the reranker and the
support judge score with them too, and sit below perplexity)."""

from footnote.models.scoring import Tokenizer, TokenScorer

__all__ = ["TokenScorer", "Tokenizer"]
