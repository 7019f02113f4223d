"""Retrieval: keyword and dense search fused by reciprocal rank."""
