"""Routing, failover, priorities, admission, caching and cancellation against real servers.

Two llama-cpp-python servers with the bundled model run on loopback for the module;
small stdlib servers stand in for backends that fail in ways a real one rarely does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from footnote.application import create_app
from footnote.config import Settings
from footnote.config.backends import BackendSettings
from footnote.models.backends import (
    BackendError,
    BackendOverloaded,
    BackendUnavailable,
    Router,
    build_router,
)
from footnote.models.base import GenerationParams, Message
from footnote.server import create_server
from tests.fakes import HashingEmbedder
from tests.integration.backend_servers import LlamaServer, fake_backend, free_port
from tests.unit.server_fixtures import ask_body, sse_payloads, write_corpus

SHORT = [Message("user", "Say hi.")]
LONG = [Message("user", "Repeat after me: " + "the quick brown fox jumps over the lazy dog " * 12)]
FEW = GenerationParams(max_tokens=4)


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LlamaServer, LlamaServer]]:
    logs = tmp_path_factory.mktemp("llama-logs")
    first = LlamaServer("pool-a", logs / "a.log")
    try:
        second = LlamaServer("pool-b", logs / "b.log")
    except BaseException:
        first.stop()
        raise
    yield first, second
    first.stop()
    second.stop()


def router(*configs: dict[str, Any]) -> Router:
    return build_router([BackendSettings(**config) for config in configs])


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_routing_by_prompt_length(pools: tuple[LlamaServer, LlamaServer]) -> None:
    a, b = pools
    routed = router(
        {"name": "short", "base_url": a.base_url, "model": a.alias, "max_prompt_tokens": 60},
        {"name": "long", "base_url": b.base_url, "model": b.alias, "min_prompt_tokens": 61},
    )
    assert routed.count_message_tokens(SHORT) <= 60 < routed.count_message_tokens(LONG)
    assert routed.generate(SHORT, FEW).strip()
    assert dict(routed.served) == {"short": 1}
    assert routed.generate(LONG, FEW).strip()
    assert dict(routed.served) == {"short": 1, "long": 1}
    # An explicit model name overrides the length rules.
    assert routed.generate(SHORT, GenerationParams(max_tokens=4, model=b.alias)).strip()
    assert routed.served["long"] == 2
    with pytest.raises(BackendError, match="no backend serves model 'gpt-9'"):
        routed.generate(SHORT, GenerationParams(max_tokens=4, model="gpt-9"))


def test_a_stopped_backend_fails_over_and_its_circuit_opens(
    pools: tuple[LlamaServer, LlamaServer], tmp_path: Path
) -> None:
    _, b = pools
    doomed = LlamaServer("pool-c", tmp_path / "c.log")
    routed = router(
        {"name": "doomed", "base_url": doomed.base_url, "failure_threshold": 2, "reset_after": 600},
        {"name": "spare", "base_url": b.base_url},
    )
    try:
        assert routed.generate(SHORT, FEW).strip()
        assert routed.served == {"doomed": 1}
    finally:
        doomed.stop()
    for _ in range(3):
        assert routed.generate(SHORT, FEW).strip()  # no error reaches the caller
    assert routed.served["spare"] == 3
    # Two failures opened the circuit: the third request did not even try the dead server.
    assert routed.failed == {"doomed": 2}
    assert routed.backends[0].breaker.state == "open"
    assert routed.health() == {"doomed": False, "spare": True}


def test_a_high_priority_request_overtakes_queued_low_priority_ones(
    pools: tuple[LlamaServer, LlamaServer],
) -> None:
    a, _ = pools
    routed = router({"name": "a", "base_url": a.base_url, "max_concurrency": 1})
    scheduler = routed.backends[0].scheduler
    finished: list[str] = []

    def ask(label: str, priority: int, tokens: int = 4) -> None:
        routed.generate(SHORT, GenerationParams(max_tokens=tokens, priority=priority))
        finished.append(label)

    threads = [threading.Thread(target=ask, args=("running", 0, 12))]
    threads[0].start()
    wait_for(lambda: scheduler.active == 1, "the first request to run")
    for number, (label, priority) in enumerate([("low-1", 0), ("low-2", 0), ("high", 10)], start=1):
        threads.append(threading.Thread(target=ask, args=(label, priority)))
        threads[-1].start()
        wait_for(lambda n=number: scheduler.waiting == n, f"{label} to queue")  # type: ignore[misc]
    for thread in threads:
        thread.join(timeout=300)
    assert finished == ["running", "high", "low-1", "low-2"]


def test_a_full_queue_is_refused_with_429(pools: tuple[LlamaServer, LlamaServer], tmp_path: Path) -> None:
    a, _ = pools
    routed = router({"name": "a", "base_url": a.base_url, "max_concurrency": 1, "max_queue": 0})
    # The request must reach the backend: a question answered with quoted points generates nothing.
    settings = Settings(home=tmp_path / "home", max_concurrency=4, broad_answers=False)
    application = create_app(settings, embedder=HashingEmbedder(), generator=routed)
    application.ingest([write_corpus(tmp_path / "corpus")])
    scheduler = routed.backends[0].scheduler
    # The backend's only slot is held for the whole check, however long the server takes to start:
    # a real generation finishes on its own clock and would let the request through.
    scheduler.acquire()
    try:
        with TestClient(create_server(settings, application)) as client:
            refused = client.post("/v1/chat/completions", json=ask_body())
        with pytest.raises(BackendOverloaded):
            routed.generate(SHORT, FEW)
    finally:
        scheduler.release()
    assert routed.generate(SHORT, FEW).strip()  # the slot given back, the backend serves again
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["error"]["code"] == "overloaded"


def test_a_cache_hit_does_not_call_the_backend(
    pools: tuple[LlamaServer, LlamaServer], tmp_path: Path
) -> None:
    a, _ = pools
    routed = router({"name": "a", "base_url": a.base_url, "max_tokens_cap": 24})
    settings = Settings(home=tmp_path / "home", max_concurrency=2, answer_cache_size=4, broad_answers=False)
    application = create_app(settings, embedder=HashingEmbedder(), generator=routed)
    application.ingest([write_corpus(tmp_path / "corpus")])
    with TestClient(create_server(settings, application)) as client:
        first = client.post("/v1/chat/completions", json=ask_body("What do apple trees need?"))
        again = client.post("/v1/chat/completions", json=ask_body("what do apple trees NEED"))
        with client.stream(
            "POST", "/v1/chat/completions", json=ask_body("What do apple trees need", stream=True)
        ) as streamed:
            events = sse_payloads(streamed.iter_lines())
        assert routed.served == {"a": 1}
        (tmp_path / "corpus" / "new.txt").write_text("Pears ripen off the tree.\n", encoding="utf-8")
        application.ingest([tmp_path / "corpus"])
        client.post("/v1/chat/completions", json=ask_body("What do apple trees need?"))
    assert first.status_code == again.status_code == 200
    answer = first.json()["choices"][0]["message"]["content"]
    assert again.json()["choices"][0]["message"]["content"] == answer
    assert events[-1] == "[DONE]" and events[-2]["footnote"]["answer"] == answer
    assert routed.served == {"a": 2}  # the index changed: the cache was emptied


def test_closing_the_stream_cancels_generation(pools: tuple[LlamaServer, LlamaServer]) -> None:
    a, _ = pools
    with fake_backend() as fake:
        routed = router({"name": "slow", "base_url": fake.url("slow")}, {"name": "a", "base_url": a.base_url})
        pieces = routed.stream(SHORT, GenerationParams(max_tokens=400))
        assert next(pieces) == "tick "
        pieces.close()
        assert fake.slow_finished.wait(30)
        assert fake.slow_disconnected.is_set()
        assert fake.slow_sent < 500
        assert routed.backends[0].scheduler.active == 0
    # The same against llama.cpp: the slot is free at once and the server answers the next request.
    real = router({"name": "a", "base_url": a.base_url, "max_concurrency": 1})
    pieces = real.stream(SHORT, GenerationParams(max_tokens=400))
    next(pieces)
    pieces.close()
    assert real.backends[0].scheduler.active == 0
    assert real.generate(SHORT, FEW).strip()


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("error500", "answered HTTP 500: .*model crashed"),
        ("garbage", "malformed event"),
        ("notjson", "malformed reply"),
        ("stall-first", "timed out waiting for data"),
    ],
)
def test_a_broken_backend_fails_over_or_says_why(
    pools: tuple[LlamaServer, LlamaServer], mode: str, message: str
) -> None:
    a, _ = pools
    with fake_backend() as fake:
        broken = {"name": mode, "base_url": fake.url(mode), "timeout": 2}
        alone = router(broken)
        with pytest.raises(BackendUnavailable, match=message):
            alone.generate(SHORT, FEW)
        routed = router(broken, {"name": "a", "base_url": a.base_url})
        assert routed.generate(SHORT, FEW).strip()
        assert routed.served == {"a": 1} and routed.failed == {mode: 1}


def test_a_stall_mid_stream_ends_with_a_clear_error(pools: tuple[LlamaServer, LlamaServer]) -> None:
    a, _ = pools
    with fake_backend() as fake:
        routed = router(
            {"name": "stall", "base_url": fake.url("stall-mid"), "timeout": 2},
            {"name": "a", "base_url": a.base_url},
        )
        pieces = routed.stream(SHORT, FEW)
        assert next(pieces) == "Half"
        with pytest.raises(
            BackendUnavailable, match=r"stall failed mid-answer: .*timed out waiting for data"
        ):
            next(pieces)
        # The deadline bounds the wait even when the read timeout is longer.
        patient = router({"name": "stall", "base_url": fake.url("stall-mid"), "timeout": 600})
        late = patient.stream(SHORT, GenerationParams(max_tokens=4, deadline=time.monotonic() + 2))
        assert next(late) == "Half"
        with pytest.raises(BackendUnavailable, match="timed out"):
            next(late)
    assert routed.served == {}


def test_an_unreachable_backend_fails_over(pools: tuple[LlamaServer, LlamaServer]) -> None:
    a, _ = pools
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(
        BackendUnavailable, match=f"cannot reach {nowhere}/chat/completions .*is the server running"
    ):
        router({"name": "nowhere", "base_url": nowhere}).generate(SHORT, FEW)
    routed = router({"name": "nowhere", "base_url": nowhere}, {"name": "a", "base_url": a.base_url})
    assert routed.generate(SHORT, FEW).strip()
    assert routed.served == {"a": 1}
