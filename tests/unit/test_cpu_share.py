"""The generator shares a busy machine: it runs on the cores other processes leave free, measured
from /proc, unless its threads are set."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from footnote.models import cpu_share
from footnote.models.base import GenerationParams, Generator, Message
from footnote.models.cpu_share import CoreShare


def sampled(*samples: tuple[float, int, int, int]) -> CoreShare:
    """A share of 2 cores given its samples (time, machine ticks, busy ticks, own ticks)."""
    share = CoreShare(cores=2)
    share._started = True  # no sampling in the background
    share._samples.extend(samples)
    return share


def test_the_cores_others_keep_busy_are_the_machines_busy_time_less_this_processs() -> None:
    assert sampled().others() == 0.0 and sampled().free() == 2
    # 100 ticks of the two cores: 90 busy, 30 of them this process's own.
    busy = sampled((0.0, 1000, 400, 50), (1.0, 1100, 490, 80))
    assert busy.others() == pytest.approx(1.2)
    assert busy.free() == 1
    # Others keeping less than half a core busy take none.
    light = sampled((0.0, 1000, 400, 50), (1.0, 1100, 450, 80))
    assert light.others() == pytest.approx(0.4)
    assert light.free() == 2
    # The generator keeps one core at least.
    assert sampled((0.0, 1000, 400, 0), (1.0, 1100, 500, 0)).free() == 1


@pytest.mark.skipif(not CoreShare().readable, reason="needs Linux's /proc")
def test_a_busy_process_beside_is_seen_taking_a_core() -> None:
    share = CoreShare(cores=2)
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        share.others()  # starts the sampler
        time.sleep(cpu_share.WINDOW + 3 * cpu_share.INTERVAL)
        assert share.others() >= 0.5
    finally:
        loop.kill()
        loop.wait()


@pytest.fixture
def one_core_free(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("footnote.models.llama.free_cores", lambda: 1)
    yield


def _answered(generator: Generator) -> str:
    params = GenerationParams(max_tokens=4, temperature=0.0, seed=1)
    return "".join(generator.stream([Message("user", "Say hello.")], params))


def test_the_generator_takes_the_free_cores_unless_its_threads_are_set(one_core_free: None) -> None:
    from footnote.models.llama import LlamaCppGenerator
    from footnote.models.registry import resolve_llm

    shared = LlamaCppGenerator(resolve_llm("smollm2-135m"), context_length=512)
    fixed = LlamaCppGenerator(resolve_llm("smollm2-135m"), context_length=512, threads=2)
    assert _answered(shared) and _answered(fixed)
    assert shared._threads == 1
    assert fixed._threads == 2
