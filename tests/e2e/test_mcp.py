"""The MCP tools as a client reaches them: `footnote mcp` over stdio and `footnote serve` at
`/mcp`, real processes with the real models, driven by the official `mcp` SDK's client."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from tests.e2e.conftest import RunningServer, footnote_env, ingest, serving
from tests.integration.conftest import write_corpus
from tests.store_modes import lasting_stores

# The answer is on the second page of comets.pdf.
QUESTION = "How often does Halley's Comet return to the inner Solar System?"
ANSWER_TIMEOUT = 300  # seconds; the first call waits for the models to load on 2 busy cores


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the four-format corpus (Markdown, text, HTML, PDF) ingested."""
    home = tmp_path_factory.mktemp("mcp-home")
    lasting_stores(home)
    ingest(home, write_corpus(tmp_path_factory.mktemp("mcp-corpus")))
    return home


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[RunningServer]:
    with serving(home) as server:
        yield server


async def tool_result(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    """The tool's structured result; the call must have succeeded."""
    result = await session.call_tool(name, arguments, read_timeout_seconds=ANSWER_TIMEOUT)
    assert not result.is_error, result.content
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    """The message of a call that failed."""
    assert result.is_error
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


def check_cited_from_the_pdf_page(answer: dict[str, Any]) -> None:
    assert "76" in answer["answer"] and answer["declined"] is False, answer
    quotes = answer["citations"]
    assert any(
        "76 years" in quote["quote"] and quote["path"].endswith("comets.pdf") and quote["page"] == 2
        for quote in quotes
    ), quotes


def test_stdio_serves_the_tools_over_one_loaded_application(home: Path) -> None:
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "footnote", "mcp"], env=footnote_env(home)
    )

    async def session_checks() -> None:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert {tool.name for tool in tools} == {"ask", "search", "list_documents"}

            check_cited_from_the_pdf_page(await tool_result(session, "ask", {"question": QUESTION}))

            found = await tool_result(session, "search", {"query": "sourdough starter", "limit": 3})
            assert found["results"][0]["path"].endswith("sourdough.txt")
            listed = await tool_result(session, "list_documents", {})
            names = sorted(Path(document["path"]).name for document in listed["documents"])
            assert names == ["comets.pdf", "glaciers.html", "orchard.md", "sourdough.txt"]

            refused = await session.call_tool("ask", {"question": " "})
            assert "question is empty" in error_text(refused)

    asyncio.run(session_checks())


def test_serve_offers_the_tools_at_mcp_behind_the_api_key(served: RunningServer) -> None:
    url = f"{served.base_url}/mcp"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    refused = httpx.post(url, json=ping, headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"

    async def session_checks() -> None:
        keyed = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {served.api_key}"},
            timeout=httpx2.Timeout(30, read=ANSWER_TIMEOUT),
        )
        async with (
            keyed,
            streamable_http_client(url, http_client=keyed) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            check_cited_from_the_pdf_page(await tool_result(session, "ask", {"question": QUESTION}))
            found = await tool_result(session, "search", {"query": "glacier ice", "limit": 1})
            assert len(found["results"]) == 1 and found["results"][0]["path"].endswith("glaciers.html")
            out_of_range = await session.call_tool("search", {"query": "glacier", "limit": 500})
            assert "from 1 to 20" in error_text(out_of_range)

    asyncio.run(session_checks())
