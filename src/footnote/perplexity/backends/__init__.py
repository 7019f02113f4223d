"""Scoring backends: llama.cpp in process, transformers (reference), remote OpenAI-compatible servers."""
