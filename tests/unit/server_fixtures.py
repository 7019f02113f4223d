"""Servers on a temporary FOOTNOTE_HOME with the test-double models, for the test_server_* modules."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from footnote.answer.judge import SupportJudge
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.models.base import GenerationParams, Message
from footnote.server import create_server
from tests.fakes import HashingEmbedder, ScriptedGenerator

ORCHARD = """# Orchard Notes

Apple trees need a cold winter to set fruit well. Most apple varieties cannot pollinate
themselves. Bees carry pollen between the varieties.
"""
GLACIERS = "A glacier is a persistent body of dense ice that moves under its own weight.\n"
APPLE_REPLY = (
    "Apple trees need a cold winter to set fruit well [1]. Bees carry pollen between the varieties [1]."
)
API_KEY = "test-key-0123456789abcdef"


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "orchard.md").write_text(ORCHARD, encoding="utf-8")
    (folder / "glaciers.txt").write_text(GLACIERS, encoding="utf-8")
    return folder


class RecordingGenerator(ScriptedGenerator):
    """Also records the generation parameters of each call."""

    def __init__(self, replies: Iterable[str]) -> None:
        super().__init__(replies)
        self.params: list[GenerationParams] = []

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        self.params.append(params)
        return super().stream(messages, params)


class GatedGenerator(ScriptedGenerator):
    """Holds every answer at its first token until `gate` is set, to keep slots busy."""

    def __init__(self, replies: Iterable[str]) -> None:
        super().__init__(replies)
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.yielded = 0  # pieces the engine actually took

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        pieces = super().stream(messages, params)
        self.started.release()
        if not self.gate.wait(timeout=30):
            raise AssertionError("the test never opened the gate")
        return self._counted(pieces)

    def _counted(self, pieces: Iterator[str]) -> Iterator[str]:
        for piece in pieces:
            self.yielded += 1
            yield piece


def build(
    tmp_path: Path,
    replies: Iterable[str] = (),
    generator: ScriptedGenerator | None = None,
    ingest: bool = True,
    judge: SupportJudge | None = None,
    **overrides: Any,
) -> tuple[FastAPI, Application]:
    """A server over the two-file corpus (ingested), with `replies` queued for the fake LLM, whose
    answers are generated from the whole sources unless `reader` says otherwise."""
    settings = Settings(home=tmp_path / "home", **{"reader": "sources", **overrides})
    application = create_app(
        settings, embedder=HashingEmbedder(), generator=generator or ScriptedGenerator(replies), judge=judge
    )
    if ingest:
        application.ingest([write_corpus(tmp_path / "corpus")])
    return create_server(settings, application), application


def ask_body(question: str = "What do apple trees need?", **fields: Any) -> dict[str, Any]:
    return {"model": "sonar", "messages": [{"role": "user", "content": question}], **fields}


def sse_payloads(lines: Iterable[str]) -> list[Any]:
    """The `data:` payloads of an SSE stream: parsed JSON, and the final "[DONE]" as a string."""
    payloads: list[Any] = []
    for line in lines:
        if line.startswith("data: "):
            data = line[len("data: ") :]
            payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


def streamed_text(payloads: list[Any]) -> str:
    return "".join(
        chunk["choices"][0]["delta"].get("content") or ""
        for chunk in payloads
        if isinstance(chunk, dict) and chunk.get("choices")
    )
