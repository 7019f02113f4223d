"""The MCP tools with the test-double models, through the SDK's own client in process."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import TextContent

from footnote.core.collections import EVERYTHING
from footnote.server.mcp import MAX_SEARCH_RESULTS, mcp_server, required_text, search_limit
from footnote.server.state import ServerState
from tests.unit.server_fixtures import API_KEY, APPLE_REPLY, build

T = TypeVar("T")


def with_client(tmp_path: Path, replies: list[str], call: Callable[[Client], Awaitable[T]]) -> T:
    """`call`'s result on a client connected in process to the tools of a server over the corpus."""
    server, _ = build(tmp_path, replies)
    state: ServerState = server.state.footnote

    async def session() -> T:
        async with Client(mcp_server(state, EVERYTHING)) as client:
            return await call(client)

    return asyncio.run(session())


def test_the_three_read_only_tools_are_listed_with_their_schemas(tmp_path: Path) -> None:
    async def listed(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in with_client(tmp_path, [], listed)}
    assert set(tools) == {"ask", "search", "list_documents"}
    assert all(tool.annotations and tool.annotations.read_only_hint for tool in tools.values())
    assert tools["ask"].input_schema["required"] == ["question"]
    assert tools["search"].input_schema["properties"]["limit"]["default"] == 10
    assert tools["ask"].output_schema is not None


def test_ask_returns_the_checked_answer_with_its_quotes(tmp_path: Path) -> None:
    async def asked(client: Client) -> Any:
        return await client.call_tool("ask", {"question": "What do apple trees need?"})

    result = with_client(tmp_path, [APPLE_REPLY], asked)
    assert not result.is_error
    answer = result.structured_content
    assert answer["answer"] == APPLE_REPLY and answer["declined"] is False
    quotes = answer["citations"]
    assert quotes and all(quote["number"] == 1 for quote in quotes)
    assert any("cold winter" in quote["quote"] for quote in quotes)
    assert all(quote["path"].endswith("orchard.md") and quote["title"] for quote in quotes)
    assert all(quote["url"].startswith("file://") and quote["page"] is None for quote in quotes)


def test_search_and_list_documents_show_the_corpus(tmp_path: Path) -> None:
    async def both(client: Client) -> tuple[Any, Any]:
        found = await client.call_tool("search", {"query": "glacier ice", "limit": 1})
        listed = await client.call_tool("list_documents", {})
        return found.structured_content, listed.structured_content

    found, listed = with_client(tmp_path, [], both)
    [hit] = found["results"]
    assert hit["path"].endswith("glaciers.txt") and "dense ice" in hit["text"] and hit["score"] > 0
    documents = listed["documents"]
    assert sorted(Path(d["path"]).name for d in documents) == ["glaciers.txt", "orchard.md"]
    assert all(d["id"] > 0 and d["chunks"] >= 1 and d["title"] for d in documents)


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("ask", {"question": "   "}, "question is empty"),
        ("ask", {"question": "Why?", "history": [{"role": "system", "content": "x"}]}, "role"),
        ("search", {"query": "ice", "limit": 0}, "from 1 to 20"),
        ("search", {"query": ""}, "query is empty"),
    ],
)
def test_bad_arguments_are_tool_errors_that_say_what_to_change(
    tmp_path: Path, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async def called(client: Client) -> Any:
        return await client.call_tool(tool, arguments)

    result = with_client(tmp_path, [], called)
    assert result.is_error
    [content] = result.content
    assert isinstance(content, TextContent) and message in content.text


def test_argument_checks_name_the_argument_and_the_fix() -> None:
    assert required_text("  What is it? ", "question", "ask something") == "What is it?"
    with pytest.raises(ToolError, match="question is empty; ask something"):
        required_text("\n", "question", "ask something")
    with pytest.raises(ToolError, match="shorten it"):
        required_text("x" * 5000, "query", "")
    assert search_limit(MAX_SEARCH_RESULTS) == MAX_SEARCH_RESULTS
    with pytest.raises(ToolError, match=f"limit is {MAX_SEARCH_RESULTS + 1}"):
        search_limit(MAX_SEARCH_RESULTS + 1)


def test_mcp_over_http_needs_the_api_key(tmp_path: Path) -> None:
    server, _ = build(tmp_path, api_keys=[API_KEY])
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with TestClient(server) as client:
        refused = client.post("/mcp", json=initialize)
        accepted = client.post(
            "/mcp",
            json=initialize,
            headers={"Authorization": f"Bearer {API_KEY}", "Accept": "application/json, text/event-stream"},
        )
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    assert accepted.status_code == 200, accepted.text


def test_without_a_key_on_loopback_only_local_host_names_are_served(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    with TestClient(server, base_url="http://127.0.0.1:8080") as client:
        local = client.post("/mcp", json=ping, headers=accept)
        rebound = client.post("/mcp", json=ping, headers={**accept, "Host": "attacker.example:8080"})
    assert local.status_code == 200, local.text
    assert rebound.status_code == 421


def test_a_server_started_twice_serves_mcp_each_time(tmp_path: Path) -> None:
    server, _ = build(tmp_path)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    for _ in range(2):
        with TestClient(server, base_url="http://127.0.0.1:8080") as client:
            answered = client.post("/mcp", json=ping, headers=accept)
            assert answered.status_code == 200, answered.text
