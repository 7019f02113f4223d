"""Perplexity scoring of texts with any backend that exposes log-probabilities."""
