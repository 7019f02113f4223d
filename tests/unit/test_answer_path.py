"""The question's path from the chat route to retrieval: the modules it crosses, traced on a real
request, are the ones docs/architecture.md lists, and there are at most six."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from footnote.core.hits import SearchHit
from footnote.retrieval.retriever import HybridRetriever, RetrievalParams
from footnote.server import answers as server_answers
from footnote.server.routes import chat
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
MOST_MODULES = 6


def documented_path() -> list[str]:
    """The modules the section "The answer's path" lists, in order, as dotted names."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## The answer's path", 1)[1].split("\n## ", 1)[0]
    files = re.findall(r"^\d+\. `([\w/]+)\.py`", section, flags=re.MULTILINE)
    return ["footnote." + name.replace("/", ".") for name in files]


def traced_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The footnote modules on the stack when a chat completion's question is searched, outermost
    first, with the route that hands it over (it waits on another thread) before them."""
    stacks: list[list[str]] = []
    search = HybridRetriever.search

    def recorded(self: HybridRetriever, query: str, params: RetrievalParams | None = None) -> list[SearchHit]:
        frame, names = sys._getframe(1), []
        while frame is not None:
            names.append(frame.f_globals.get("__name__", ""))
            frame = frame.f_back
        stacks.append(names)
        return search(self, query, params)

    monkeypatch.setattr(HybridRetriever, "search", recorded)
    server, _ = build(tmp_path, replies=[APPLE_REPLY])
    with TestClient(server) as client:
        assert client.post("/v1/chat/completions", json=ask_body()).status_code == 200
    assert len(stacks) == 1
    modules: list[str] = []
    for name in reversed(stacks[0]):
        if name.startswith("footnote.") and (not modules or modules[-1] != name):
            modules.append(name)
    return [chat.__name__, *modules, HybridRetriever.__module__]


def test_the_question_crosses_the_documented_modules_and_no_more_than_six(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert chat.start_answer is server_answers.start_answer  # the route hands the request over
    path = traced_path(tmp_path, monkeypatch)
    assert path == documented_path()
    assert len(path) <= MOST_MODULES
    assert not any(module.startswith("footnote.server") for module in path[2:])
