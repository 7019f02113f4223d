"""`footnote mcp`: the Model Context Protocol on standard input and output."""

from __future__ import annotations

from footnote.config import Settings


def mcp() -> None:
    """Serve the Model Context Protocol over stdio (tools ask, search, list_documents).

    An MCP client starts this command and talks to it on standard input and output; the models
    load once and answer every call. `footnote serve` offers the same tools at /mcp."""
    from footnote.application import create_app
    from footnote.server.app import build_state
    from footnote.server.mcp import serve_stdio
    from footnote.store.vector_stores import check_vectors

    settings = Settings()
    check_vectors(settings)  # a Chroma server that is not there is one line now, not a failed call later
    application = create_app(settings)
    state = build_state(settings, application)
    try:
        serve_stdio(state)
    finally:
        state.scoring.close()
        state.executor.shutdown(wait=False, cancel_futures=True)
        application.close()
