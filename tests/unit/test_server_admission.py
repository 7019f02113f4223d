"""Deadline-aware admission: each request class has a latency objective; what cannot finish
within it is refused at once with Retry-After, before any work; the earliest deadline is
served first, so interactive requests go ahead and batch requests still get their turn.

Times here are a fake clock's, advanced by the test double that answers: known service
times, so the estimates are exact and no test depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from footnote.models.base import GenerationParams, Message
from footnote.server.admission import DeadlinePool, Overloaded, Slot
from footnote.server.request_class import RequestClass
from tests.fakes import HashingEmbedder, ScriptedGenerator
from tests.unit.server_fixtures import APPLE_REPLY, ask_body, build


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TimedGenerator(ScriptedGenerator):
    """Every answer takes exactly `seconds` of the fake clock; answers after the first wait for
    `gate`, so a test can keep the slot busy."""

    def __init__(self, replies: Iterable[str], clock: FakeClock, seconds: float) -> None:
        super().__init__(replies)
        self.clock = clock
        self.seconds = seconds
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        pieces = list(super().stream(messages, params))
        if len(self.calls) > 1:
            self.started.release()
            if not self.gate.wait(timeout=30):
                raise AssertionError("the test never opened the gate")
        self.clock.now += self.seconds  # the answer took its time
        return iter(pieces)


def _pool(clock: FakeClock, **objectives: float) -> DeadlinePool:
    given: dict[RequestClass, float] = {"interactive": 4.0, "api": 8.0, "batch": 60.0}
    given.update(objectives)  # type: ignore[typeddict-item]
    return DeadlinePool("generation", limit=1, max_queue=100, timeout=30, objectives=given, clock=clock)


@pytest.mark.parametrize("answer_cache_size", [0, 8])
def test_a_request_that_would_miss_its_objective_is_refused_at_once_untouched(
    tmp_path: Path, answer_cache_size: int
) -> None:
    clock = FakeClock()
    generator = TimedGenerator([APPLE_REPLY] * 3, clock, seconds=2.0)
    server, application = build(
        tmp_path,
        generator=generator,
        preload_models=False,
        latency_objective_interactive=4.0,
        latency_objective_api=2.0,
        latency_objective_batch=30.0,
        answer_cache_size=answer_cache_size,
    )
    state = server.state.footnote
    state.generation.clock = clock
    embedder = application.embedder
    assert isinstance(embedder, HashingEmbedder)

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=server)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=30) as client:
            first = await client.post("/v1/chat/completions", json=ask_body())  # answers take 2 s
            busy = asyncio.create_task(client.post("/v1/chat/completions", json=ask_body("Do bees help?")))
            try:
                await asyncio.to_thread(generator.started.acquire)  # it holds the only slot
                before = (len(embedder.calls), len(generator.calls))
                # Refused at once, or this waits behind the held slot and the guard ends the test.
                asked = client.post("/v1/chat/completions", json=ask_body("What about pears?"))
                refused = await asyncio.wait_for(asked, timeout=20)
                assert (len(embedder.calls), len(generator.calls)) == before, "work was done for it"
                batch = asyncio.create_task(
                    client.post(
                        "/v1/chat/completions",
                        json=ask_body("What is a glacier?"),
                        headers={"X-Footnote-Class": "batch"},
                    )
                )
                while state.generation.waiting < 1:
                    await asyncio.sleep(0.01)
                metrics = await client.get("/metrics")
            finally:
                generator.gate.set()
            return [first, await busy, refused, await batch, metrics]

    first, busy, refused, batch, metrics = asyncio.run(scenario())
    assert (first.status_code, busy.status_code, batch.status_code) == (200, 200, 200)
    # 2 s of waiting for the answer just started, plus 2 s of its own, is past the 2 s objective
    # of an API request (an interactive one, with 4 s, would have been admitted).
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "2"  # the estimated wait
    assert refused.json()["error"]["type"] == "rate_limit_error"
    message = refused.json()["error"]["message"]
    assert "wait about 2.0 s and take about 2.0 s, past its 2 s objective" in message
    families = {family.name: family for family in text_string_to_metric_families(metrics.text)}

    def by_class(name: str) -> dict[str, float]:
        return {s.labels["class"]: s.value for s in families[name].samples if "class" in s.labels}

    assert by_class("footnote_admission_rejected") == {"interactive": 0, "api": 1, "batch": 0}
    assert by_class("footnote_admission_waiting") == {"interactive": 0, "api": 0, "batch": 1}
    # A newcomer now waits for the holder; a batch one also for the batch answer queued before it.
    waits = by_class("footnote_admission_estimated_wait_seconds")
    assert waits == {"interactive": 2, "api": 2, "batch": 4}
    assert by_class("footnote_admission_objective_seconds") == {"interactive": 4, "api": 2, "batch": 30}
    assert families["footnote_admission_service_seconds"].samples[0].value == 2
    assert families["process_resident_memory_bytes"].samples[0].value > 0


def test_an_idle_server_admits_even_what_takes_longer_than_its_objective() -> None:
    clock = FakeClock()
    pool = _pool(clock, api=1.0)

    async def scenario() -> None:
        slot = await pool.acquire("api")
        clock.now += 5.0
        slot.release()  # answers take 5 s, past the 1 s objective
        again = await pool.acquire("api")  # still admitted: nothing else would use the slot
        with pytest.raises(Overloaded) as refused:
            await pool.acquire("api")
        assert refused.value.retry_after == 5 and "past its 1 s objective" in str(refused.value)
        assert pool.waiting == 0
        again.release()

    asyncio.run(scenario())
    assert pool.rejected == {"interactive": 0, "api": 1, "batch": 0}


def test_a_running_answer_is_expected_to_take_what_recent_ones_that_ran_as_long_took() -> None:
    clock = FakeClock()
    pool = _pool(clock)

    async def scenario() -> list[float]:
        for seconds in (0.2, 0.2, 2.0, 2.0):  # quick answers (declined) and long ones
            slot = await pool.acquire("api")
            clock.now += seconds
            slot.release()
        holder = await pool.acquire("api")
        waits = [pool.estimated_wait("api")]
        clock.now += 0.5  # past the quick ones: most likely a long answer, 1.5 s to go
        waits.append(pool.estimated_wait("api"))
        clock.now += 2.0  # longer than any recent answer: about to finish
        waits.append(pool.estimated_wait("api"))
        waits.append(pool.service_time)  # the mean of the recent answers
        holder.release()
        return waits

    assert asyncio.run(scenario()) == pytest.approx([1.1, 1.5, 0.0, 1.1])


async def _queue(pool: DeadlinePool, name: RequestClass, served: list[tuple[str, Slot]]) -> None:
    served.append((name, await pool.acquire(name)))


async def _served_beyond(served: list[tuple[str, Slot]], count: int) -> Slot:
    """The slot of the next request served once `count` have been (a handover takes a few turns
    of the loop)."""
    while len(served) <= count:
        await asyncio.sleep(0)
    return served[count][1]


def test_the_earliest_deadline_is_served_first_interactive_before_batch() -> None:
    clock = FakeClock()
    pool = _pool(clock)

    async def scenario() -> list[str]:
        served: list[tuple[str, Slot]] = []
        holder = await pool.acquire("api")
        tasks = []
        for name in ("batch", "api", "interactive", "batch", "interactive"):
            tasks.append(asyncio.create_task(_queue(pool, name, served)))
            await asyncio.sleep(0)
            clock.now += 0.1
        assert pool.waiting == 5
        assert pool.waiting_by_class == {"interactive": 2, "api": 1, "batch": 2}
        holder.release()
        for count in range(5):
            (await _served_beyond(served, count)).release()
        await asyncio.gather(*tasks)
        return [name for name, _ in served]

    assert asyncio.run(scenario()) == ["interactive", "interactive", "api", "batch", "batch"]


def test_a_full_queue_makes_room_for_an_earlier_deadline_by_refusing_the_latest() -> None:
    clock = FakeClock()
    pool = DeadlinePool("generation", 1, 2, 30, {"interactive": 4.0, "api": 8.0, "batch": 60.0}, clock=clock)

    async def scenario() -> tuple[list[str], BaseException | None]:
        served: list[tuple[str, Slot]] = []
        holder = await pool.acquire("api")
        early = asyncio.create_task(_queue(pool, "batch", served))
        await asyncio.sleep(0)
        clock.now += 0.5
        late = asyncio.create_task(_queue(pool, "batch", served))
        await asyncio.sleep(0)
        with pytest.raises(Overloaded):
            await pool.acquire("batch")  # full, and its deadline is the latest: refused at once
        urgent = asyncio.create_task(_queue(pool, "interactive", served))
        await asyncio.gather(late, return_exceptions=True)
        assert pool.waiting == 2 and pool.waiting_by_class == {"interactive": 1, "api": 0, "batch": 1}
        holder.release()
        for count in range(2):
            (await _served_beyond(served, count)).release()
        await asyncio.gather(early, urgent)
        return [name for name, _ in served], late.exception()

    order, refusal = asyncio.run(scenario())
    assert order == ["interactive", "batch"]
    assert isinstance(refusal, Overloaded) and "took its place" in str(refusal)
    assert pool.rejected == {"interactive": 0, "api": 0, "batch": 2}


def test_a_batch_request_is_served_under_a_steady_stream_of_interactive_ones() -> None:
    clock = FakeClock()
    pool = _pool(clock, interactive=4.0, batch=20.0)

    async def scenario() -> list[str]:
        served: list[tuple[str, Slot]] = []
        holder = await pool.acquire("interactive")
        tasks = [asyncio.create_task(_queue(pool, "batch", served))]
        await asyncio.sleep(0)
        # One interactive request arrives with every answer (1 s each): the server is never idle.
        for count in range(30):
            clock.now += 1.0
            tasks.append(asyncio.create_task(_queue(pool, "interactive", served)))
            await asyncio.sleep(0)
            holder.release()
            holder = await _served_beyond(served, count)
        holder.release()
        (await _served_beyond(served, 30)).release()  # the last one queued
        await asyncio.gather(*tasks)
        return [name for name, _ in served]

    order = asyncio.run(scenario())
    assert "batch" in order
    waited = order.index("batch")
    # Interactive requests went first until the batch request's deadline was the earliest: it
    # had waited 16 s of its 20 s, when an interactive deadline (now + 4 s) was no earlier.
    assert waited == 15 and set(order[:waited]) == {"interactive"}
    assert len(order) == 31 and pool.waiting == 0
    assert pool.rejected == {"interactive": 0, "api": 0, "batch": 0}


def test_a_newcomer_counts_its_own_answer_as_a_slow_one() -> None:
    clock = FakeClock()
    pool = _pool(clock, api=4.0)

    async def scenario() -> None:
        for seconds in (1.0,) * 8 + (3.0,) * 2:  # most answers take 1 s, one in five 3 s
            slot = await pool.acquire("api")
            clock.now += seconds
            slot.release()
        holder = await pool.acquire("api")
        clock.now += 0.5
        assert pool.service_time == pytest.approx(1.4)
        assert pool.slow_service_time == 3.0
        # The holder has 0.9 s to go on average, 2.5 s if it is a slow one: behind it a mean
        # answer would end at 2.3 s, inside the 4 s objective; counted slow, at 5.5 s: refused.
        assert pool.estimated_wait("api") == pytest.approx(0.9)
        with pytest.raises(Overloaded) as refused:
            await pool.acquire("api")
        assert "wait about 2.5 s and take about 3.0 s, past its 4 s objective" in str(refused.value)
        holder.release()

    asyncio.run(scenario())
    assert pool.rejected == {"interactive": 0, "api": 1, "batch": 0}
