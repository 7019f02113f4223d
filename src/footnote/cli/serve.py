"""`footnote serve`: the HTTP API under uvicorn."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from footnote.config import Settings


def serve(
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on (default 127.0.0.1); any other needs an API key."),
    ] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (default 8080).")] = None,
    api_key: Annotated[
        list[str] | None,
        typer.Option(
            "--api-key",
            envvar="FOOTNOTE_API_KEY",
            help="Require `Authorization: Bearer KEY` (repeat for several keys; also FOOTNOTE_API_KEYS).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the HTTP API: OpenAI and Perplexity Sonar compatible, and MCP at /mcp."""
    import uvicorn

    from footnote import tracing
    from footnote.server import create_server
    from footnote.server.guards import check_bind
    from footnote.server.logs import configure_logging
    from footnote.store.vector_stores import check_vectors

    overrides: dict[str, Any] = {"host": host, "port": port}
    settings_kwargs = {name: value for name, value in overrides.items() if value is not None}
    settings = Settings(**settings_kwargs)
    if api_key:
        # Validated like the configured ones (length, no spaces) by building Settings again.
        keys = [key.get_secret_value() for key in settings.api_keys] + list(api_key)
        settings = Settings(**settings_kwargs, api_keys=keys)
    check_bind(settings)
    check_vectors(settings)  # a Chroma server that is not there is one line now, not a 503 later
    configure_logging()
    tracing.configure(settings.trace_exporter, settings.trace_endpoint)
    uvicorn.run(
        create_server(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,  # the server writes its own JSON access log, without headers
        timeout_graceful_shutdown=30,
    )
