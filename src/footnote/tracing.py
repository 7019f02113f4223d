"""Optional OpenTelemetry tracing of the request path: retrieve, rerank, generate, verify.

Off by default and then free: `span()` hands back a do-nothing context. `configure()`
with an exporter ("console", "otlp", or an exporter object) installs a tracer, after
which every `span()` records a span, nested under the request's span when there is one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_tracer: Any = None


def configure(exporter: Any, endpoint: str | None = None, service_name: str = "footnote") -> None:
    """Start tracing to `exporter`: "console", "otlp" (gRPC, `endpoint` or OTEL_* env), an exporter object."""
    global _tracer
    if exporter in (None, "none"):
        _tracer = None
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracer = provider.get_tracer("footnote")


def enabled() -> bool:
    return _tracer is not None


@contextmanager
def span(name: str, **attributes: str | int | float | bool) -> Iterator[Any]:
    """A span named `name` while the block runs (nothing at all when tracing is off)."""
    if _tracer is None:
        yield None
        return
    with _tracer.start_as_current_span(name, attributes=attributes) as current:
        yield current


def record(name: str, start_ns: int, end_ns: int, **attributes: str | int | float | bool) -> None:
    """A finished span with the given times, for work spread over a generator's yields."""
    if _tracer is None:
        return
    finished = _tracer.start_span(name, start_time=start_ns, attributes=attributes)
    finished.end(end_time=end_ns)
