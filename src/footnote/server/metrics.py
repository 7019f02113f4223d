"""Prometheus metrics and the access log, both recorded by one middleware.

Each server has its own registry, so several servers in one process (tests) never
share counters. Routes are labelled by their template (`/v1/documents/{document_id}`),
never by the raw path, so a client cannot blow up the number of series. The admission
figures by request class and the process's resident memory are read when scraped.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Iterator

import psutil
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from footnote import tracing
from footnote.errors import StoreError
from footnote.server.admission import AdmissionPool, DeadlinePool

access_log = logging.getLogger("footnote.server.access")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "footnote_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "footnote_http_request_duration_seconds",
            "Time from request to the last byte of the response.",
            ["route", "method", "status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.time_to_first_token = Histogram(
            "footnote_time_to_first_token_seconds",
            "Time from admission to the model's first token.",
            buckets=TTFT_BUCKETS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "footnote_generated_tokens", "Tokens the model generated.", registry=self.registry
        )
        self.queue_depth = Gauge(
            "footnote_queue_depth", "Requests waiting for a slot, by pool.", ["pool"], registry=self.registry
        )
        self.in_flight = Gauge(
            "footnote_in_flight", "Requests holding a slot, by pool.", ["pool"], registry=self.registry
        )
        self.index_documents = Gauge(
            "footnote_index_documents", "Documents in the catalog.", registry=self.registry
        )
        self.index_chunks = Gauge("footnote_index_chunks", "Chunks in the catalog.", registry=self.registry)
        self.store_latency = Histogram(
            "footnote_store_call_duration_seconds",
            "Time of one call to a store, by store (catalog, vectors) and operation.",
            ["store", "operation"],
            buckets=STORE_BUCKETS,
            registry=self.registry,
        )
        self.store_errors = Counter(
            "footnote_store_errors",
            "Calls to a store that raised, by store and operation.",
            ["store", "operation"],
            registry=self.registry,
        )
        process = psutil.Process()
        Gauge(
            "process_resident_memory_bytes", "Resident memory of the server process.", registry=self.registry
        ).set_function(lambda: float(process.memory_info().rss))

    def watch_pool(self, pool: AdmissionPool) -> None:
        self.queue_depth.labels(pool.name).set_function(lambda: float(pool.waiting))
        self.in_flight.labels(pool.name).set_function(lambda: float(pool.active))

    def watch_deadlines(self, pool: DeadlinePool) -> None:
        self.registry.register(_DeadlineCollector(pool))

    def watch_index(self, documents: Callable[[], int], chunks: Callable[[], int]) -> None:
        self.index_documents.set_function(lambda: _counted(documents))
        self.index_chunks.set_function(lambda: _counted(chunks))

    def observe_store(self, store: str, operation: str, seconds: float, failed: bool) -> None:
        self.store_latency.labels(store, operation).observe(seconds)
        if failed:
            self.store_errors.labels(store, operation).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _DeadlineCollector(Collector):
    """The generation pool's admission by request class, as it stands when scraped."""

    def __init__(self, pool: DeadlinePool) -> None:
        self.pool = pool

    def collect(self) -> Iterator[Metric]:
        pool = self.pool
        waiting = GaugeMetricFamily(
            "footnote_admission_waiting",
            "Requests waiting for a generation slot, by class.",
            labels=["class"],
        )
        wait = GaugeMetricFamily(
            "footnote_admission_estimated_wait_seconds",
            "The wait a request of the class arriving now is estimated to face.",
            labels=["class"],
        )
        objective = GaugeMetricFamily(
            "footnote_admission_objective_seconds", "The latency objective of the class.", labels=["class"]
        )
        rejected = CounterMetricFamily(
            "footnote_admission_rejected",
            "Requests answered 429 by the generation pool, by class.",
            labels=["class"],
        )
        for name, seconds in pool.objectives.items():
            waiting.add_metric([name], pool.waiting_by_class[name])
            wait.add_metric([name], pool.estimated_wait(name))
            objective.add_metric([name], seconds)
            rejected.add_metric([name], pool.rejected[name])
        service = GaugeMetricFamily(
            "footnote_admission_service_seconds",
            "How long an answer holds a generation slot: the mean of the recent holds.",
            value=pool.service_time,
        )
        yield from (waiting, wait, objective, rejected, service)


def _counted(count: Callable[[], int]) -> float:
    """The count, or NaN while the store cannot say: the other metrics, the store errors
    among them, must still be scraped when the catalog is down."""
    try:
        return float(count())
    except StoreError:
        return math.nan


def route_label(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


class MetricsMiddleware:
    """Counts and times every request, gives it an id, and writes one JSON access-log line."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = uuid.uuid4().hex
        status = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message).append("X-Request-ID", request_id)
            await send(message)

        try:
            with tracing.span(f"{scope['method']} {scope['path']}", request_id=request_id) as span:
                await self.app(scope, receive, send_with_status)
                if span is not None:
                    span.set_attribute("http.route", route_label(scope))
                    span.set_attribute("http.status_code", status)
        finally:
            self._record(scope, status, time.perf_counter() - started, request_id)

    def _record(self, scope: Scope, status: int, seconds: float, request_id: str) -> None:
        route, method = route_label(scope), scope["method"]
        self.metrics.requests.labels(route, method, str(status)).inc()
        self.metrics.latency.labels(route, method, str(status)).observe(seconds)
        # Never headers: they carry the API key.
        access_log.info(
            "request",
            extra={
                "request_id": request_id,
                "method": method,
                "route": route,
                "path": scope["path"],
                "status": status,
                "duration_ms": round(seconds * 1000, 1),
            },
        )
