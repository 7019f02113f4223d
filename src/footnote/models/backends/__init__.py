"""Generation backends beyond the in-process model: OpenAI-compatible servers behind a router."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from footnote.config.backends import EMBEDDED, BackendSettings
from footnote.models.backends.breaker import CircuitBreaker
from footnote.models.backends.errors import (
    BackendError,
    BackendOverloaded,
    BackendTimeout,
    BackendUnavailable,
)
from footnote.models.backends.openai_generator import OpenAIGenerator
from footnote.models.backends.router import Backend, Router
from footnote.models.backends.scheduler import PriorityScheduler
from footnote.models.base import Generator

__all__ = [
    "Backend",
    "BackendError",
    "BackendOverloaded",
    "BackendTimeout",
    "BackendUnavailable",
    "CircuitBreaker",
    "OpenAIGenerator",
    "PriorityScheduler",
    "Router",
    "build_backend",
    "build_router",
]


def build_backend(config: BackendSettings, embedded: Callable[[], Generator] | None = None) -> Backend:
    """One backend from its settings; `embedded` builds the in-process model when asked for."""
    if config.base_url == EMBEDDED:
        if embedded is None:
            raise BackendError("base_url 'embedded' needs the in-process model, which is not available here")
        generator = embedded()
        concurrency = 1 if not generator.thread_safe else config.max_concurrency
    else:
        key = config.api_key.get_secret_value() if config.api_key else None
        generator = OpenAIGenerator(
            config.base_url,
            config.model,
            key,
            config.context_length,
            config.connect_timeout,
            config.timeout,
            name=config.label,
            max_connections=config.max_concurrency,
        )
        concurrency = config.max_concurrency
    return Backend(
        name=config.label,
        generator=generator,
        scheduler=PriorityScheduler(config.label, concurrency, config.max_queue),
        breaker=CircuitBreaker(config.failure_threshold, config.reset_after),
        model=config.model,
        tasks=frozenset(config.tasks),
        min_prompt_tokens=config.min_prompt_tokens,
        max_prompt_tokens=config.max_prompt_tokens,
        max_tokens_cap=config.max_tokens_cap,
    )


def build_router(
    configs: Sequence[BackendSettings], embedded: Callable[[], Generator] | None = None
) -> Router:
    return Router([build_backend(config, embedded) for config in configs])
