"""The Model Context Protocol: footnote's tools for MCP clients, over stdio and at `/mcp`.

Three read-only tools: `ask` (a checked answer with its citations), `search` (ranked
passages) and `list_documents`. They run on the same `ServerState` as the HTTP routes, so an
answer takes the generation pool's admission, the answer cache and the model lock exactly
as `POST /v1/chat/completions` does. `footnote mcp` serves them on standard input and
output; `footnote serve` mounts them at `/mcp` (streamable HTTP), behind the API keys.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from footnote import __version__
from footnote.answer.result import Answer
from footnote.application.sources import source_uri
from footnote.config import Settings
from footnote.core.collections import EVERYTHING, Access
from footnote.core.filters import SearchFilter
from footnote.core.hits import SearchHit
from footnote.errors import FootnoteError
from footnote.server.answers import collect, start_answer
from footnote.server.errors import ApiError
from footnote.server.guards import is_loopback
from footnote.server.routes.chat import answer_request
from footnote.server.schemas import Text
from footnote.server.schemas.chat import ChatCompletionRequest, ChatMessage
from footnote.server.state import ACCESS_KEY, ServerState

MCP_PATH = "/mcp"
MAX_QUESTION_CHARS = 4000
MAX_HISTORY_TURNS = 50
MAX_SEARCH_RESULTS = 20
INSTRUCTIONS = (
    "footnote answers questions from the user's own documents. `ask` gives a checked answer whose "
    "[n] footnotes point at verbatim quotes; when it declines, the documents do not say. `search` "
    "finds passages, and `list_documents` shows what is indexed."
)
ASK_FIX = "pass the question to answer from the documents"
SEARCH_FIX = "pass keywords or a question"
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


class Turn(BaseModel):
    """One earlier message of the conversation."""

    role: Literal["user", "assistant"]
    content: Text = Field(max_length=MAX_QUESTION_CHARS * 4)


class CitedQuote(BaseModel):
    """One footnote: `[number]` in the answer stands for this verbatim quote from the document."""

    number: int
    title: str
    path: str
    url: str = Field(description="the document's own URL, or its file:// URI")
    quote: str
    page: int | None = Field(description="the page the quote is on, for sources with pages (PDF)")


class CheckedAnswer(BaseModel):
    answer: str = Field(description="Markdown; each [n] marks a claim checked against citation n")
    declined: bool = Field(description="true when the documents do not answer the question")
    citations: list[CitedQuote]


class Passage(BaseModel):
    title: str
    path: str
    url: str
    text: str = Field(description="the passage as it stands in the document")
    score: float = Field(description="fused retrieval score; higher is better")
    page: int | None


class SearchResults(BaseModel):
    results: list[Passage]


class IndexedDocument(BaseModel):
    id: int
    title: str
    path: str
    format: str
    collection: str
    chunks: int


class DocumentList(BaseModel):
    documents: list[IndexedDocument]


def required_text(text: str, name: str, fix: str) -> str:
    """`text` stripped, or a `ToolError` naming the argument `name` and how to `fix` it."""
    stripped = text.strip()
    if not stripped:
        raise ToolError(f"{name} is empty; {fix}")
    if len(stripped) > MAX_QUESTION_CHARS:
        raise ToolError(f"{name} is {len(stripped):,} characters long; shorten it to {MAX_QUESTION_CHARS:,}")
    return stripped


def search_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_SEARCH_RESULTS:
        raise ToolError(f"limit is {limit}; pass a number of results from 1 to {MAX_SEARCH_RESULTS}")
    return limit


def checked_answer(answer: Answer) -> CheckedAnswer:
    """The answer as the `ask` tool returns it; a withheld answer shows no citation, as in the API."""
    quotes = []
    for citation in answer.shown_citations:
        source = answer.sources[citation.number - 1]
        quotes.append(
            CitedQuote(
                number=citation.number,
                title=source.title or Path(source.path).name,
                path=citation.path,
                url=source_uri(source.path, source.url),
                quote=citation.quote,
                page=citation.page,
            )
        )
    return CheckedAnswer(answer=answer.text, declined=answer.abstained, citations=quotes)


def passage(hit: SearchHit) -> Passage:
    return Passage(
        title=hit.title or Path(hit.path).name,
        path=hit.path,
        url=source_uri(hit.path, hit.url),
        text=hit.text.strip(),
        score=hit.score,
        page=hit.page,
    )


# The caller of the tool being run: its key's access (every collection over stdio). Set for each
# request to `/mcp` from what `ApiKeyMiddleware` decided; a tool run without it refuses.
CALLER: ContextVar[Access | None] = ContextVar("footnote_mcp_caller", default=None)
CollectionsArgument = Annotated[
    list[Annotated[str, Field(max_length=64)]] | None,
    Field(description="the collections to use; every one the caller can read when absent", max_length=50),
]


def caller(default: Access | None = None) -> Access:
    """The access of the tool call's caller: the HTTP request's key, else `default` (the server's
    own: every collection over stdio)."""
    access = CALLER.get() or default
    if access is None:
        raise ToolError(
            "the caller's access is unknown; call the tool through footnote serve or footnote mcp"
        )
    return access


class FootnoteTools:
    """The tools, bound to one server's state; each method is one MCP tool. `access` is what a
    call without an HTTP request's key may read (None: nothing)."""

    def __init__(self, state: ServerState, access: Access | None = None) -> None:
        self.state = state
        self.access = access

    def _readable(self, collections: list[str] | None) -> tuple[str, ...] | None:
        """The collections a tool call may read, or a tool error naming one it cannot."""
        with translated_errors():
            return caller(self.access).readable(collections)

    async def ask(
        self,
        question: Annotated[Text, Field(description="the question to answer from the documents")],
        history: Annotated[
            list[Turn] | None,
            Field(
                description="earlier turns, oldest first, for a follow-up question",
                max_length=MAX_HISTORY_TURNS,
            ),
        ] = None,
        collections: CollectionsArgument = None,
    ) -> CheckedAnswer:
        """Answer a question from the indexed documents, every claim footnoted with a verbatim
        quote that was checked to support it; declines when the documents do not say."""
        messages = [ChatMessage(role=turn.role, content=turn.content) for turn in history or ()]
        messages.append(ChatMessage(role="user", content=required_text(question, "question", ASK_FIX)))
        access = caller(self.access)
        with translated_errors():
            body = ChatCompletionRequest(messages=messages, collections=collections)
            request = answer_request(body, self.state, access=access)
            run = await start_answer(self.state, request)
            answer = await collect(run)
        return checked_answer(answer)

    async def search(
        self,
        query: Annotated[Text, Field(description="keywords or a question")],
        limit: Annotated[int, Field(description=f"how many passages, 1 to {MAX_SEARCH_RESULTS}")] = 10,
        collections: CollectionsArgument = None,
    ) -> SearchResults:
        """Find passages in the indexed documents by keyword and meaning, best first."""
        text, count = required_text(query, "query", SEARCH_FIX), search_limit(limit)
        scope = self._readable(collections)
        with translated_errors():
            hits = await self.state.run_work(self._search, text, count, scope)
        return SearchResults(results=[passage(hit) for hit in hits])

    def _search(self, query: str, limit: int, collections: tuple[str, ...] | None) -> list[SearchHit]:
        filters = SearchFilter(collections=collections) if collections is not None else None
        return self.state.models.retrieval().search(query, limit=limit, filters=filters)

    async def list_documents(self, collections: CollectionsArgument = None) -> DocumentList:
        """List the indexed documents: id, title, path, format, collection and how many chunks each has."""
        scope = self._readable(collections)
        with translated_errors():
            records = await self.state.run_work(self.state.application.documents, scope)
        documents = [
            IndexedDocument(
                id=r.id,
                title=r.title,
                path=r.path,
                format=r.format,
                collection=r.collection,
                chunks=r.chunk_count,
            )
            for r in records
        ]
        return DocumentList(documents=documents)


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turns footnote's own errors (a busy server, models that failed to load, a store that
    does not answer) into tool errors the client reads, instead of crashes it is told nothing of."""
    try:
        yield
    except (ApiError, FootnoteError) as exc:
        raise ToolError(str(exc)) from exc


def mcp_server(state: ServerState, access: Access | None = None) -> MCPServer:
    """An MCP server with footnote's tools on `state`; a call reads what its HTTP request's key
    opens, or `access` when it came another way (stdio)."""
    server = MCPServer("footnote", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = FootnoteTools(state, access)
    for tool in (tools.ask, tools.search, tools.list_documents):
        server.add_tool(tool, annotations=READ_ONLY, structured_output=True)
    return server


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Checks of the Host and Origin headers against DNS rebinding, when they are what guards
    the server: bound to this machine and open without a key. A key guards it otherwise (and
    a proxy in front may send any Host)."""
    if settings.api_keys or not is_loopback(settings.host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class _RunningSessions:
    """An ASGI app handing each request to the session manager `serving_http` runs now."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = CALLER.set(scope.get("state", {}).get(ACCESS_KEY))
        try:
            await StreamableHTTPASGIApp(self.server.session_manager)(scope, receive, send)
        finally:
            CALLER.reset(token)


def http_route(server: MCPServer) -> Route:
    """`/mcp`: streamable HTTP, handled by the session manager `serving_http` runs."""
    return Route(MCP_PATH, endpoint=_RunningSessions(server))


@asynccontextmanager
async def serving_http(server: MCPServer, settings: Settings) -> AsyncIterator[None]:
    """Serve `/mcp` while the app runs: stateless (any replica can answer any request), JSON
    replies. A session manager runs once, so each start of the app makes its own."""
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(settings),
        max_request_body_size=settings.max_body_bytes,
        host=settings.host,
    )
    async with server.session_manager.run():
        yield


def serve_stdio(state: ServerState) -> None:
    """Serve the tools on standard input and output until the client closes them. The models
    load once, in the background from the start (with `preload_models`), for every call."""
    if state.settings.preload_models:
        threading.Thread(target=state.models.preload, name="footnote-preload", daemon=True).start()
    state.application.keep_keyword_index()
    mcp_server(state, EVERYTHING).run("stdio")  # whoever runs the process reads every collection
