"""GET /v1/settings: the models, backends and limits this server runs with (read-only).

Settings change only through the environment or the TOML file and a restart; this
route shows them, with secrets left out, so the web page can display them.
"""

from __future__ import annotations

from fastapi import APIRouter

from footnote import __version__
from footnote.server.schemas.settings import Backends, ServerSettings
from footnote.server.state import ServerState, State

router = APIRouter(tags=["settings"])


def _backends(state: ServerState) -> Backends:
    if state.models.state != "ready":
        return Backends(generator=None, embedder=None, vector_index=None)
    return Backends(**state.application.backend_names())


@router.get("/v1/settings", response_model=ServerSettings)
async def server_settings(state: State) -> ServerSettings:
    """Active models, backends and limits; change them in the settings file and restart."""
    s = state.settings
    return ServerSettings(
        version=__version__,
        llm=s.llm,
        embedder=s.embedder,
        models_state=state.models.state,
        backends=_backends(state),
        top_k=s.top_k,
        chunk_tokens=s.chunk_tokens,
        chunk_overlap=s.chunk_overlap,
        context_tokens=s.context_tokens,
        answer_tokens=s.answer_tokens,
        temperature=s.temperature,
        max_upload_bytes=s.max_upload_bytes,
        max_body_bytes=s.max_body_bytes,
        max_concurrency=s.max_concurrency,
        request_timeout=s.request_timeout,
        auth_required=bool(s.api_keys),
    )
