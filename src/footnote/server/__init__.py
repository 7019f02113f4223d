"""The HTTP API and web UI."""
