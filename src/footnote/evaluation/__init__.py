"""Retrieval, answer and perplexity evaluations."""
