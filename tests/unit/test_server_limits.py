"""Abuse safety: API keys, body caps, admission control (429), metrics, binding rules."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Message
from typer.testing import CliRunner

from footnote.cli.main import app as cli
from footnote.config import Settings
from footnote.errors import ConfigError
from footnote.server.admission import AdmissionPool, Overloaded
from footnote.server.guards import check_bind, is_loopback
from tests.unit.server_fixtures import API_KEY, APPLE_REPLY, GatedGenerator, ask_body, build


def test_api_keys_are_required_when_configured(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY], api_keys=["another-key-0123456789", API_KEY])
    caplog.set_level(logging.INFO)
    with TestClient(server) as client:
        missing = client.get("/v1/models")
        wrong = client.get("/v1/models", headers={"Authorization": "Bearer wrong-key-0123456789abcd"})
        basic = client.get("/v1/models", headers={"Authorization": f"Basic {API_KEY}"})
        right = client.post(
            "/v1/chat/completions", json=ask_body(), headers={"Authorization": f"Bearer {API_KEY}"}
        )
        health = client.get("/healthz")
        spec = client.get("/openapi.json").json()
    for refused in (missing, wrong, basic):
        assert refused.status_code == 401
        assert refused.json()["error"]["type"] == "authentication_error"
        assert refused.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and health.status_code == 200
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert spec["paths"]["/v1/models"]["get"]["security"] == [{"bearer": []}]
    assert "security" not in spec["paths"]["/healthz"]["get"]
    assert API_KEY not in caplog.text


def test_bodies_over_the_cap_are_refused(tmp_path: Path) -> None:
    server, _ = build(tmp_path, max_body_bytes=4096)
    big = ask_body("apple " * 2000)

    def chunked() -> Iterator[bytes]:
        for _ in range(10):
            yield b" " * 1000
        yield b"{}"

    with TestClient(server) as client:
        declared = client.post("/v1/chat/completions", json=big)
        streamed = client.post(
            "/v1/chat/completions", content=chunked(), headers={"content-type": "application/json"}
        )
        liar = client.post(
            "/v1/chat/completions",
            content=b"{}",
            headers={"content-length": "abc", "content-type": "application/json"},
        )
    assert declared.status_code == 413 and declared.json()["error"]["type"] == "invalid_request_error"
    assert streamed.status_code == 413
    assert liar.status_code == 400


def test_a_burst_beyond_the_queue_gets_429_with_retry_after(tmp_path: Path) -> None:
    generator = GatedGenerator([APPLE_REPLY] * 2)
    server, _ = build(tmp_path, generator=generator, max_concurrency=1, max_queue=1, preload_models=False)

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=server)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=30) as client:
            first = asyncio.create_task(client.post("/v1/chat/completions", json=ask_body()))
            await asyncio.to_thread(generator.started.acquire)  # the first holds the only slot
            queued = asyncio.create_task(client.post("/v1/chat/completions", json=ask_body()))
            await asyncio.sleep(0.2)
            refused = await asyncio.gather(
                *(client.post("/v1/chat/completions", json=ask_body()) for _ in range(3))
            )
            metrics = await client.get("/metrics")
            generator.gate.set()
            return [await first, await queued, *refused, metrics]

    *responses, metrics = asyncio.run(burst())
    assert [r.status_code for r in responses] == [200, 200, 429, 429, 429]
    for refused in responses[2:]:
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"]["type"] == "rate_limit_error"
    families = {family.name: family for family in text_string_to_metric_families(metrics.text)}
    depth = {s.labels["pool"]: s.value for s in families["footnote_queue_depth"].samples}
    in_flight = {s.labels["pool"]: s.value for s in families["footnote_in_flight"].samples}
    assert depth["generation"] == 1 and in_flight["generation"] == 1


def test_a_client_leaving_mid_stream_stops_the_model_and_frees_the_slot(tmp_path: Path) -> None:
    generator = GatedGenerator([" ".join(["Apple trees need a cold winter."] * 50), APPLE_REPLY])
    server, _ = build(tmp_path, generator=generator, max_concurrency=1, max_queue=0, preload_models=False)
    body = json.dumps(ask_body(stream=True)).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }

    async def leave_after_first_chunk() -> list[bytes]:
        chunks: list[bytes] = []
        gone = asyncio.Event()
        requested = False

        async def receive() -> Message:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                chunks.append(message["body"])
                gone.set()  # the client reads the first chunk and leaves

        await server(scope, receive, send)
        return chunks

    chunks = asyncio.run(leave_after_first_chunk())
    generator.gate.set()
    assert chunks and b'"role": "assistant"' in chunks[0] and b"[DONE]" not in b"".join(chunks)
    state = server.state.footnote
    deadline = time.monotonic() + 10
    while state.generation.active and time.monotonic() < deadline:
        time.sleep(0.02)
    assert state.generation.active == 0  # the worker saw the client go and gave the slot back
    assert generator.yielded <= 2  # of 300 pieces: the model was stopped, not run to the end
    with TestClient(server) as client:
        assert client.post("/v1/chat/completions", json=ask_body()).status_code == 200


def given_back(client: TestClient, seconds: float = 10.0) -> None:
    """Wait until no request holds a slot (a timed-out answer finishes in its thread)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        families = text_string_to_metric_families(client.get("/metrics").text)
        if not any(s.value for f in families if f.name == "footnote_in_flight" for s in f.samples):
            return
        time.sleep(0.05)
    raise AssertionError(f"a slot was still held {seconds} s after the answer timed out")


def test_an_answer_past_the_request_timeout_gets_504(tmp_path: Path) -> None:
    generator = GatedGenerator([APPLE_REPLY, APPLE_REPLY])
    server, _ = build(tmp_path, generator=generator, request_timeout=0.5, preload_models=False)
    try:
        with TestClient(server) as client:
            slow = client.post("/v1/chat/completions", json=ask_body())
            generator.gate.set()
            given_back(client)
            after = client.post("/v1/chat/completions", json=ask_body())
    finally:
        generator.gate.set()
    assert slow.status_code == 504 and slow.json()["error"]["type"] == "timeout_error"
    assert after.status_code == 200  # the slot and the model were given back


def test_metrics_are_parseable_and_count_what_happened(tmp_path: Path) -> None:
    server, _ = build(tmp_path, [APPLE_REPLY])
    with TestClient(server) as client:
        client.post("/v1/chat/completions", json=ask_body())
        client.get("/v1/documents/424242")
        client.get("/no/such/route")
        text = client.get("/metrics").text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    requests = {
        (s.labels["route"], s.labels["status"]): s.value
        for s in families["footnote_http_requests"].samples
        if s.name.endswith("_total")
    }
    assert requests[("/v1/chat/completions", "200")] == 1
    assert requests[("/v1/documents/{document_id}", "404")] == 1
    assert requests[("unmatched", "404")] == 1
    latency = [
        s for s in families["footnote_http_request_duration_seconds"].samples if s.name.endswith("_count")
    ]
    assert any(s.labels["route"] == "/v1/chat/completions" and s.value == 1 for s in latency)
    ttft = [s for s in families["footnote_time_to_first_token_seconds"].samples if s.name.endswith("_count")]
    assert ttft[0].value == 1
    tokens = [s for s in families["footnote_generated_tokens"].samples if s.name.endswith("_total")]
    assert tokens[0].value > 0
    assert families["footnote_index_documents"].samples[0].value == 2
    assert families["footnote_index_chunks"].samples[0].value == 2


def test_admission_pool_admits_queues_hands_over_and_refuses() -> None:
    async def scenario() -> None:
        pool = AdmissionPool("test", limit=1, max_queue=1, timeout=0.2)
        held = await pool.acquire()
        waiter = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0)
        assert (pool.active, pool.waiting) == (1, 1)
        with pytest.raises(Overloaded):
            await pool.acquire()  # queue full: refused at once
        held.release()
        handed = await waiter
        assert (pool.active, pool.waiting) == (1, 0)
        with pytest.raises(Overloaded) as timed_out:
            await pool.acquire()  # waits 0.2 s, then gives up
        assert timed_out.value.retry_after >= 1 and pool.waiting == 0
        handed.release()
        handed.release()  # twice is harmless
        assert pool.active == 0
        cancelled = await pool.acquire()
        task = asyncio.create_task(pool.acquire())
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        cancelled.release()
        assert (pool.active, pool.waiting) == (0, 0)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.org", False),
    ],
)
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_binding_beyond_loopback_needs_a_key(tmp_path: Path) -> None:
    check_bind(Settings(home=tmp_path, host="127.0.0.1"))
    check_bind(Settings(home=tmp_path, host="0.0.0.0", api_keys=[API_KEY]))
    with pytest.raises(ConfigError, match="without an API key"):
        check_bind(Settings(home=tmp_path, host="0.0.0.0"))
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "serve", "--host", "0.0.0.0"])
    assert isinstance(result.exception, ConfigError)


def test_api_keys_setting_parses_validates_and_hides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOOTNOTE_API_KEYS", f"{API_KEY}, second-key-0123456789")
    settings = Settings(home=tmp_path)
    assert [key.get_secret_value() for key in settings.api_keys] == [API_KEY, "second-key-0123456789"]
    assert API_KEY not in repr(settings) and API_KEY not in str(settings.public_dict())
    with pytest.raises(ValueError, match="too weak"):
        Settings(home=tmp_path, api_keys=["short"])
