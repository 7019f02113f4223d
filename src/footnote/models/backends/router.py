"""A generator that sends each request to the right backend, and to the next one when it fails.

Rules come from settings: the task (generation, perplexity scoring, embeddings), the
prompt length in tokens (short prompts to one pool, long ones to another) and an
explicit model name. Backends whose rules match are tried first, in the configured
order, then the others that serve the task, so a dead pool fails over instead of
failing the request. A circuit breaker skips a backend that keeps failing; each
backend has its own priority queue. Failover happens only before the first piece of
text: after that, the client has seen part of an answer and gets a clear error.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from footnote.models.backends.breaker import CircuitBreaker
from footnote.models.backends.errors import BackendError, BackendOverloaded, BackendUnavailable
from footnote.models.backends.scheduler import PriorityScheduler
from footnote.models.base import GenerationParams, Generator, Message


@dataclass
class Backend:
    name: str
    generator: Generator
    scheduler: PriorityScheduler
    breaker: CircuitBreaker = field(default_factory=CircuitBreaker)
    model: str = "default"
    tasks: frozenset[str] = frozenset({"generate"})
    min_prompt_tokens: int = 0
    max_prompt_tokens: int | None = None
    max_tokens_cap: int | None = None

    def fits(self, prompt_tokens: int) -> bool:
        longest = self.max_prompt_tokens if self.max_prompt_tokens is not None else self.context_length
        return self.min_prompt_tokens <= prompt_tokens <= longest

    @property
    def context_length(self) -> int:
        return self.generator.context_length

    def capped(self, params: GenerationParams, prompt_tokens: int) -> GenerationParams:
        room = max(1, self.context_length - prompt_tokens)
        cap = min(room, self.max_tokens_cap or room)
        return replace(params, max_tokens=min(params.max_tokens, cap))


class Router(Generator):
    thread_safe = True

    def __init__(self, backends: Sequence[Backend], name: str = "router") -> None:
        if not backends:
            raise BackendError("no generation backend is configured; add one under [[backends]]")
        self.backends = list(backends)
        self.name = name
        self.context_length = max(backend.context_length for backend in self.backends)
        self.served: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self._lock = threading.Lock()

    def candidates(
        self, prompt_tokens: int, task: str = "generate", model: str | None = None
    ) -> list[Backend]:
        """Backends to try, best first: matching rules, then the rest that serve the task."""
        serving = [b for b in self.backends if task in b.tasks]
        if model is not None:
            serving = [b for b in serving if model in (b.model, b.name)]
            if not serving:
                known = ", ".join(sorted({b.model for b in self.backends}))
                raise BackendError(f"no backend serves model {model!r} for {task}; configured: {known}")
        if not serving:
            raise BackendError(f"no backend serves the task {task!r}; add it to a backend's tasks")
        matching = [b for b in serving if b.fits(prompt_tokens)]
        return matching + [b for b in serving if b not in matching]

    def health(self) -> dict[str, bool]:
        """Probe every backend that can be probed; a failed probe counts against its circuit."""
        report = {}
        for backend in self.backends:
            probe = getattr(backend.generator, "health", None)
            healthy = bool(probe()) if callable(probe) else True
            if not healthy:
                backend.breaker.failure()
            report[backend.name] = healthy
        return report

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        prompt_tokens = self.count_message_tokens(messages)
        problems: list[str] = []
        overloaded: list[BackendOverloaded] = []
        for backend in self.candidates(prompt_tokens, "generate", params.model):
            if not backend.breaker.allow():
                problems.append(f"{backend.name}: circuit open after repeated failures")
                continue
            try:
                backend.scheduler.acquire(params.priority, params.deadline)
            except BackendOverloaded as exc:
                overloaded.append(exc)
                backend.breaker.success()  # busy is not broken; ends a half-open trial
                continue
            started, since = False, time.monotonic()
            try:
                for piece in backend.generator.stream(messages, backend.capped(params, prompt_tokens)):
                    started = True
                    yield piece
            except BackendUnavailable as exc:
                backend.breaker.failure()
                self._count(self.failed, backend.name)
                if started:
                    raise BackendUnavailable(f"{backend.name} failed mid-answer: {exc}") from exc
                problems.append(str(exc))
                continue
            except GeneratorExit:
                backend.breaker.success()  # the consumer stopped; the backend was fine
                raise
            finally:
                backend.scheduler.release(time.monotonic() - since)
            backend.breaker.success()
            self._count(self.served, backend.name)
            return
        if overloaded and not problems:
            raise BackendOverloaded(
                "+".join(exc.pool for exc in overloaded), min(exc.retry_after for exc in overloaded)
            )
        raise BackendUnavailable(
            "no backend could answer: " + "; ".join(problems + [str(exc) for exc in overloaded])
        )

    def _count(self, counter: Counter[str], name: str) -> None:
        with self._lock:
            counter[name] += 1
