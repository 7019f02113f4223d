"""The scheduler, circuit breaker, router rules and answer cache on their own (no servers)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from footnote.answer.cache import AnswerCache, same_words
from footnote.application import create_app
from footnote.config import Settings
from footnote.config.backends import BackendSettings
from footnote.errors import OverloadedError
from footnote.models.backends import (
    Backend,
    BackendOverloaded,
    BackendTimeout,
    BackendUnavailable,
    CircuitBreaker,
    PriorityScheduler,
    Router,
)
from footnote.models.backends.admission import Admission
from footnote.models.base import GenerationParams, Message
from footnote.server.admission import AdmissionPool
from tests.fakes import HashingEmbedder, ScriptedGenerator


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class DownGenerator(ScriptedGenerator):
    """A backend that is always down."""

    def __init__(self) -> None:
        super().__init__([])

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        self.calls.append(list(messages))
        raise BackendUnavailable("cannot reach http://nowhere/v1")


def backend(name: str, generator: ScriptedGenerator, **rules: int) -> Backend:
    return Backend(name, generator, PriorityScheduler(name, 1, 4), CircuitBreaker(2, 5.0), **rules)  # type: ignore[arg-type]


def test_the_scheduler_serves_by_priority_then_arrival() -> None:
    scheduler = PriorityScheduler("pool", max_concurrency=1, max_queue=3)
    scheduler.acquire()
    order: list[str] = []

    def wait(label: str, priority: int) -> None:
        with scheduler.slot(priority, time.monotonic() + 30):
            order.append(label)

    threads = []
    for count, (label, priority) in enumerate([("low-1", 0), ("low-2", 0), ("high", 5)], start=1):
        threads.append(threading.Thread(target=wait, args=(label, priority)))
        threads[-1].start()
        while scheduler.waiting < count:
            time.sleep(0.001)
    with pytest.raises(BackendOverloaded, match=r"the server is busy \(pool\); retry after \d+ s"):
        scheduler.acquire()
    scheduler.release()
    for thread in threads:
        thread.join(10)
    assert order == ["high", "low-1", "low-2"]
    assert scheduler.active == 0 and scheduler.waiting == 0


def test_one_admission_keeps_the_books_of_both_queues() -> None:
    books: Admission[str] = Admission("pool", limit=1, max_queue=3)
    assert books._admit("running")
    assert not books._admit("low", 0) and not books._admit("high", 5) and not books._admit("gone", 9)
    with pytest.raises(OverloadedError, match=r"busy \(pool\); retry after 4 s"):  # 3 + 1 rounds of 1 s
        books._admit("late")
    books._withdraw("gone")
    assert books._release(held=6.0) == "high" and books.retry_after() == 4  # now 2 s a hold, 1 + 1 rounds
    assert books._release(None) == "low" and books._release(None) is None
    assert (books.active, books.waiting) == (0, 0)
    assert issubclass(PriorityScheduler, Admission) and issubclass(AdmissionPool, Admission)


def test_a_queued_request_gives_up_at_its_deadline() -> None:
    scheduler = PriorityScheduler("pool", max_concurrency=1, max_queue=3)
    scheduler.acquire()
    with pytest.raises(BackendTimeout, match="deadline passed while queued"):
        scheduler.acquire(deadline=time.monotonic() + 0.05)
    assert scheduler.waiting == 0


def test_the_breaker_opens_then_lets_one_trial_through() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=2, reset_after=10, clock=clock)
    breaker.failure()
    assert breaker.allow()
    breaker.failure()
    assert breaker.state == "open" and not breaker.allow()
    clock.now = 10
    assert breaker.allow()  # the trial
    assert not breaker.allow()
    breaker.failure()
    assert breaker.state == "open"
    clock.now = 20
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and breaker.allow()


def test_rules_pick_the_pool_and_a_down_pool_fails_over() -> None:
    short = backend("short", DownGenerator(), max_prompt_tokens=50)
    long = backend("long", ScriptedGenerator(["from long", "again", "third"]), min_prompt_tokens=51)
    router = Router([short, long])
    assert [b.name for b in router.candidates(10)] == ["short", "long"]
    assert [b.name for b in router.candidates(500)] == ["long", "short"]
    question = [Message("user", "hi")]
    for reply in ("from long", "again", "third"):
        assert router.generate(question, GenerationParams()) == reply
    # The down pool was tried twice, then its circuit opened and it was skipped.
    assert len(short.generator.calls) == 2  # type: ignore[attr-defined]
    assert router.failed == {"short": 2} and router.served == {"long": 3}


def test_max_tokens_is_capped_by_policy_and_context() -> None:
    capped = backend("capped", ScriptedGenerator([]), max_tokens_cap=32)
    assert capped.capped(GenerationParams(max_tokens=500), 10).max_tokens == 32
    assert capped.capped(GenerationParams(max_tokens=500), 2040).max_tokens == 8  # 2048-token context


def test_backend_settings_name_the_fix() -> None:
    with pytest.raises(ValueError, match="must start with http:// or https://"):
        BackendSettings(base_url="127.0.0.1:8000")
    with pytest.raises(ValueError, match=r"max_prompt_tokens .* is below min_prompt_tokens"):
        BackendSettings(base_url="http://x/v1", min_prompt_tokens=100, max_prompt_tokens=10)


def test_the_answer_cache_matches_near_duplicates_within_ttl_and_version() -> None:
    clock = Clock()
    cache: AnswerCache[str] = AnswerCache(size=2, ttl=60, threshold=0.9, clock=clock)
    q = "Do apple trees need cold winters?"
    cache.put([1.0, 0.0], q, "opts", "v1", "answer one")
    assert cache.get([0.96, 0.28], "do aplpe trees need cold winters", "opts", "v1") == "answer one"
    assert cache.get([0.8, 0.6], q, "opts", "v1") is None  # cosine 0.8: another question
    assert cache.get([1.0, 0.0], q, "other options", "v1") is None
    clock.now = 61
    assert cache.get([1.0, 0.0], q, "opts", "v1") is None  # expired
    cache.put([1.0, 0.0], "one", "opts", "v1", "one")
    cache.put([0.0, 1.0], "two", "opts", "v1", "two")
    assert cache.get([1.0, 0.0], "one", "opts", "v1") == "one"  # now the most recently used
    cache.put([0.6, 0.8], "three", "opts", "v1", "three")  # evicts "two", the least recently used
    assert len(cache) == 2 and cache.get([0.0, 1.0], "two", "opts", "v1") is None
    assert cache.get([1.0, 0.0], "one", "opts", "v2") is None  # the index changed
    assert len(cache) == 0


def test_the_lexical_guard_keeps_opposite_questions_apart() -> None:
    assert same_words("Does X increase Y?", "does x INCREASE y")
    assert same_words("Does X increase Y?", "Y increase does X")  # order
    assert same_words("Does X increase Y?", "Does X icnrease Y")  # a transposition typo
    assert not same_words("Hyperfibrinogenemia increases rates", "Hyperfibrinogenemia decreases rates")
    assert not same_words("Does X increase Y?", "Does X reduce Y?")
    assert not same_words("Does X not increase Y?", "Does X increase Y?")  # a dropped word
    cache: AnswerCache[str] = AnswerCache(size=4, ttl=60, threshold=0.9)
    cache.put([1.0, 0.0], "X increases Y", "opts", "v1", "yes")
    assert cache.get([1.0, 0.0], "X decreases Y", "opts", "v1") is None  # even at cosine 1


def test_settings_choose_the_router_and_default_to_the_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOOTNOTE_BACKENDS", '[{"base_url": "http://127.0.0.1:9/v1/", "name": "gpu"}]')
    routed = create_app(Settings(home=tmp_path / "routed"), embedder=HashingEmbedder())
    assert routed.generator_thread_safe
    assert isinstance(routed.generator, Router)
    assert [(b.name, b.generator.base_url) for b in routed.generator.backends] == [  # type: ignore[attr-defined]
        ("gpu", "http://127.0.0.1:9/v1")
    ]
    monkeypatch.delenv("FOOTNOTE_BACKENDS")
    plain = create_app(Settings(home=tmp_path / "plain"), embedder=HashingEmbedder())
    assert plain.settings.backends == [] and not plain.generator_thread_safe
