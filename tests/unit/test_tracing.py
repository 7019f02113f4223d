"""OpenTelemetry spans: none when off, the request path's spans when an exporter is configured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from footnote import tracing
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    tracing.configure(memory)
    yield memory
    tracing.configure("none")


def test_spans_are_free_when_tracing_is_off() -> None:
    tracing.configure("none")
    with tracing.span("retrieve") as span:
        assert span is None
    assert not tracing.enabled()


def test_a_chat_request_records_its_path(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY])
    reply = TestClient(server).post("/v1/chat/completions", json=ask_body())
    assert reply.status_code == 200, reply.text
    spans = {span.name: span for span in exporter.get_finished_spans()}
    request = spans["POST /v1/chat/completions"]
    assert request.attributes is not None and request.attributes["http.status_code"] == 200
    assert request.attributes["request_id"] == reply.headers["X-Request-ID"]


def test_the_answer_path_is_traced(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    _, application = build(tmp_path, [APPLE_REPLY])
    answer = application.ask("What do apple trees need?")
    assert answer.citations
    names = [span.name for span in exporter.get_finished_spans()]
    assert names == ["retrieve", "generate", "verify"]
