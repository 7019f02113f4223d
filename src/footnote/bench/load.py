"""Open-loop load: requests arrive at a fixed average rate whether or not earlier ones finished.

Each step of the ladder sends Poisson arrivals at one offered rate for a fixed time, then
waits for the stragglers (up to the request timeout). A closed loop (next request when
the last one returns) would hide overload, because a slow server slows its own load;
here a saturated server shows growing latency, 429s or errors instead.

Two first-response times are measured apart, as they answer different questions: time to
first token (the first non-empty content delta: when a reader sees anything) and time to
first checked sentence (when the stream holds, whole, the first sentence of the checked
answer that the closing chunk's `footnote` detail reports). A request missing either is
counted as missing; neither stands in for the other or for the total latency.

A step may offer a mix of request classes (`X-Footnote-Class`: interactive, api, batch);
each class is then reported on its own too: sent, answered, refused and its latencies.
Refusals are timed as well (an overloaded server should say 429 at once, with a
`Retry-After`), and the server's resident memory is sampled through the step.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import httpx

from footnote.bench.queries import BenchQuery
from footnote.core.stats import percentile
from footnote.models.backends.errors import BackendError, BackendTimeout
from footnote.models.backends.openai_client import AsyncOpenAIClient, Event

Status = Literal["ok", "rejected", "error", "timeout"]


CLASS_HEADER = "X-Footnote-Class"


@dataclass(frozen=True)
class Outcome:
    status: Status
    kind: str
    first_token: float | None = None  # seconds to the first non-empty content delta
    first_sentence: float | None = None  # seconds until the first checked sentence had streamed whole
    latency: float | None = None  # seconds to the end of the stream (or to the 429)
    detail: str = ""
    request_class: str = ""  # the X-Footnote-Class sent; "" when none was (the server's default)
    retry_after: float | None = None  # a 429's Retry-After, in seconds


@dataclass
class StepResult:
    offered_qps: float
    duration_s: float
    sent: int
    ok: int
    rejected: int
    errors: int
    timeouts: int
    achieved_qps: float
    first_token_s: dict[str, float | None]
    first_sentence_s: dict[str, float | None]
    latency_s: dict[str, float | None]
    rss_bytes: int | None  # the server's resident memory at the end of the step
    # Answered requests that streamed no content, or not the whole first checked sentence.
    missing_first_token: int = 0
    missing_first_sentence: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    sample_errors: list[str] = field(default_factory=list)
    rss_peak_bytes: int | None = None  # the most resident memory sampled during the step
    rejected_in_s: dict[str, float | None] = field(default_factory=dict)  # time to the 429
    retry_after_s: dict[str, float | None] = field(default_factory=dict)
    missing_retry_after: int = 0  # 429s without a Retry-After in seconds
    by_class: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def reject_rate(self) -> float:
        return self.rejected / self.sent if self.sent else 0.0

    @property
    def error_rate(self) -> float:
        return (self.errors + self.timeouts) / self.sent if self.sent else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(reject_rate=round(self.reject_rate, 4), error_rate=round(self.error_rate, 4))
        return data


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50, p95 and p99 by the nearest-rank method (None when there is nothing to rank)."""
    result: dict[str, float | None] = {}
    for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
        value = percentile(values, q)
        result[name] = None if value is None else round(value, 4)
    return result


@dataclass(frozen=True)
class LoadTarget:
    url: str
    api_key: str | None = None
    max_tokens: int = 64
    timeout: float = 120.0
    # Request classes and their shares of the requests; empty: no class is sent.
    mix: tuple[tuple[str, float], ...] = ()

    def pick_class(self, rng: random.Random) -> str:
        if not self.mix:
            return ""
        names, weights = zip(*self.mix, strict=True)
        return str(rng.choices(names, weights)[0])

    def client(self) -> AsyncOpenAIClient:
        """The OpenAI-compatible client of the server under load: no cap on open connections."""
        return AsyncOpenAIClient(
            f"{self.url}/v1",
            self.api_key,
            timeout=self.timeout,
            connect_timeout=10.0,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            key_setting="--api-key (FOOTNOTE_BENCH_API_KEY)",
        )


async def ask(
    client: AsyncOpenAIClient, target: LoadTarget, query: BenchQuery, request_class: str = ""
) -> Outcome:
    outcome = await _ask(client, target, query, {CLASS_HEADER: request_class} if request_class else {})
    return replace(outcome, request_class=request_class)


async def _ask(
    client: AsyncOpenAIClient, target: LoadTarget, query: BenchQuery, headers: dict[str, str]
) -> Outcome:
    body = {
        "model": "footnote",
        "messages": [{"role": "user", "content": query.text}],
        "stream": True,
        "max_tokens": target.max_tokens,
    }
    started = time.perf_counter()
    try:
        async with client.stream("/chat/completions", body, headers) as response:
            return await _read_stream(client.events(response), query, started)
    except BackendTimeout:
        return Outcome("timeout", query.kind, detail=f"no answer within {target.timeout:g} s")
    except BackendError as exc:
        if exc.status == 429:
            latency = time.perf_counter() - started
            return Outcome("rejected", query.kind, latency=latency, retry_after=exc.retry_after)
        return Outcome("error", query.kind, detail=str(exc))


_FOOTNOTE_MARK = re.compile(r"\s?\[\d+\]")


async def _read_stream(events: AsyncIterator[Event], query: BenchQuery, started: float) -> Outcome:
    """Times the events up to `data: [DONE]` (a stream that ends without it is an error)."""
    streamed: list[tuple[float, str]] = []  # (seconds, text so far) after each content delta
    first_checked = ""  # the checked answer's first sentence, from the closing chunk
    async for event in events:
        if "error" in event.data:
            error = event.data["error"]
            status: Status = "rejected" if error.get("type") == "rate_limit_error" else "error"
            return Outcome(status, query.kind, detail=str(error.get("message")))
        if event.text:
            text = streamed[-1][1] + event.text if streamed else event.text
            streamed.append((time.perf_counter() - started, text))
        sentences = (event.data.get("footnote") or {}).get("sentences") or []
        if sentences:
            first_checked = str(sentences[0].get("text") or "")
    latency = time.perf_counter() - started
    first_token = streamed[0][0] if streamed else None
    return Outcome("ok", query.kind, first_token, _first_seen(streamed, first_checked), latency)


def _first_seen(streamed: Sequence[tuple[float, str]], sentence: str) -> float | None:
    """When the streamed text first held `sentence` whole (footnote marks aside), or None."""
    wanted = _without_marks(sentence)
    if not wanted:
        return None
    return next((seconds for seconds, text in streamed if wanted in _without_marks(text)), None)


def _without_marks(text: str) -> str:
    return " ".join(_FOOTNOTE_MARK.sub("", text).split())


async def run_step(
    target: LoadTarget,
    queries: Sequence[BenchQuery],
    rate: float,
    duration: float,
    rng: random.Random,
    rss: Callable[[], int | None],
    classes: random.Random | None = None,
) -> StepResult:
    """One step. Classes are drawn from `classes`, apart from `rng`: with or without a mix,
    the same seed gives the same arrivals and questions."""
    classes = classes or random.Random(0)
    memory = MemorySampler(rss)
    sampling = asyncio.create_task(memory.run())
    async with target.client() as client:
        tasks: list[asyncio.Task[Outcome]] = []
        started = time.perf_counter()
        offset = rng.expovariate(rate)
        while offset < duration:
            delay = started + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            query = queries[rng.randrange(len(queries))]
            tasks.append(asyncio.create_task(ask(client, target, query, target.pick_class(classes))))
            offset += rng.expovariate(rate)
        outcomes = list(await asyncio.gather(*tasks))
        elapsed = time.perf_counter() - started
    end_rss = await memory.stop(sampling)
    step = summarise(outcomes, rate, duration, max(elapsed, duration), end_rss)
    step.rss_peak_bytes = memory.peak
    return step


class MemorySampler:
    """Reads the server's resident memory every `interval` seconds (off the event loop)."""

    def __init__(self, rss: Callable[[], int | None], interval: float = 1.0) -> None:
        self.rss = rss
        self.interval = interval
        self.peak: int | None = None

    def _note(self, value: int | None) -> int | None:
        if value is not None:
            self.peak = max(self.peak or 0, value)
        return value

    async def run(self) -> None:
        while True:
            self._note(await asyncio.to_thread(self.rss))
            await asyncio.sleep(self.interval)

    async def stop(self, sampling: asyncio.Task[None]) -> int | None:
        """Stops sampling and takes the last reading."""
        sampling.cancel()
        with suppress(asyncio.CancelledError):
            await sampling
        return self._note(await asyncio.to_thread(self.rss))


def summarise(
    outcomes: Sequence[Outcome], rate: float, duration: float, elapsed: float, rss_bytes: int | None
) -> StepResult:
    ok = [o for o in outcomes if o.status == "ok"]
    first_tokens = [o.first_token for o in ok if o.first_token is not None]
    first_sentences = [o.first_sentence for o in ok if o.first_sentence is not None]
    kinds: dict[str, int] = {}
    for outcome in ok:
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
    failures = [o.detail for o in outcomes if o.status in ("error", "timeout") and o.detail]
    rejected = [o for o in outcomes if o.status == "rejected"]
    retry_after = [o.retry_after for o in rejected if o.retry_after is not None]
    classes = sorted({o.request_class for o in outcomes if o.request_class})
    return StepResult(
        offered_qps=rate,
        duration_s=duration,
        sent=len(outcomes),
        ok=len(ok),
        rejected=sum(o.status == "rejected" for o in outcomes),
        errors=sum(o.status == "error" for o in outcomes),
        timeouts=sum(o.status == "timeout" for o in outcomes),
        achieved_qps=round(len(ok) / elapsed, 4) if elapsed else 0.0,
        first_token_s=percentiles(first_tokens),
        first_sentence_s=percentiles(first_sentences),
        latency_s=percentiles([o.latency for o in ok if o.latency is not None]),
        rss_bytes=rss_bytes,
        missing_first_token=len(ok) - len(first_tokens),
        missing_first_sentence=len(ok) - len(first_sentences),
        by_kind=kinds,
        sample_errors=sorted(set(failures))[:5],
        rejected_in_s=percentiles([o.latency for o in rejected if o.latency is not None]),
        retry_after_s=percentiles(retry_after),
        missing_retry_after=len(rejected) - len(retry_after),
        by_class={name: class_summary([o for o in outcomes if o.request_class == name]) for name in classes},
    )


def class_summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """One request class's share of a step: counts, latencies of the answered, Retry-After of the refused."""
    ok = [o for o in outcomes if o.status == "ok"]
    rejected = [o for o in outcomes if o.status == "rejected"]
    return {
        "sent": len(outcomes),
        "ok": len(ok),
        "rejected": len(rejected),
        "errors": sum(o.status in ("error", "timeout") for o in outcomes),
        "first_token_s": percentiles([o.first_token for o in ok if o.first_token is not None]),
        "latency_s": percentiles([o.latency for o in ok if o.latency is not None]),
        "retry_after_s": percentiles([o.retry_after for o in rejected if o.retry_after is not None]),
    }


def saturation(steps: Sequence[StepResult]) -> dict[str, Any]:
    """The first offered rate the server did not keep up with, and p99s of the step below it.

    Keeping up: at least 90 % of the requests sent answered, under 5 % errors and 429s, and
    a median latency within 3x of the lowest rate's (a growing queue shows there first).
    Achieved QPS is not the test: with few, slow requests per step its drain time dominates.
    """
    baseline = next((s.latency_s["p50"] for s in steps if s.latency_s["p50"] is not None), None)
    below: StepResult | None = None
    saturated: float | None = None
    for step in steps:
        median = step.latency_s["p50"]
        kept_up = (
            step.sent > 0
            and step.ok >= 0.9 * step.sent
            and step.error_rate + step.reject_rate < 0.05
            and (baseline is None or median is None or median <= 3 * baseline)
        )
        if not kept_up:
            saturated = step.offered_qps
            break
        below = step
    return {
        "saturation_qps": saturated,
        "highest_sustained_qps": below.offered_qps if below else None,
        "p99_first_token_below_s": below.first_token_s["p99"] if below else None,
        "p99_first_sentence_below_s": below.first_sentence_s["p99"] if below else None,
        "p99_latency_below_s": below.latency_s["p99"] if below else None,
        "low_load_p99_latency_s": steps[0].latency_s["p99"] if steps else None,
    }
