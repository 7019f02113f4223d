"""The HTTP API (OpenAI and Perplexity Sonar compatible) and, later, the web UI."""

from footnote.server.app import create_server

__all__ = ["create_server"]
