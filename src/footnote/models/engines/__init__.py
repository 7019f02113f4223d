"""The engines that run an answer model in this process: one registry, filled by its modules.

`FOOTNOTE_LLM` and `FOOTNOTE_LANGUAGE_LLM` name a model and, optionally, the engine that runs
it: `engine:model` names both, and a name without a registered engine before its colon is a
model of the default engine, llama.cpp (a registered name or a GGUF file). Each engine is a
module of this package that registers its opener with `@answer_engine(name)`; the modules are
found, not listed, so a new local backend is one new module here.
"""

from __future__ import annotations

from collections.abc import Callable

from footnote.config import Settings
from footnote.core.modules import package_modules, registering
from footnote.models.base import Generator

# (model, settings, display name) -> the model, loaded; NotFoundError when it is not installed.
AnswerModelOpener = Callable[[str, Settings, str], Generator]

DEFAULT_ENGINE = "llama.cpp"

_ENGINES: dict[str, AnswerModelOpener] = {}


def answer_engine(name: str) -> Callable[[AnswerModelOpener], AnswerModelOpener]:
    """Register the decorated function as the opener of the engine `name`."""
    if not name or ":" in name or name != name.strip():
        raise ValueError(f"engine name '{name}' must be non-empty, without a colon or outer spaces")
    return registering(_ENGINES, name)


def engine_names() -> tuple[str, ...]:
    """Every registered engine, the default first."""
    return (DEFAULT_ENGINE, *sorted(name for name in _ENGINES if name != DEFAULT_ENGINE))


def engine_and_model(spec: str) -> tuple[str, str]:
    """The engine `spec` names and the model it runs: `engine:model`, else the default engine's `spec`."""
    engine, colon, model = spec.partition(":")
    if colon and engine in _ENGINES:
        return engine, model
    return DEFAULT_ENGINE, spec


def open_answer_model(spec: str, settings: Settings, display_name: str = "") -> Generator:
    """The answer model `spec` names, loaded by its engine; shown as `display_name` (default `spec`)."""
    engine, model = engine_and_model(spec)
    return _ENGINES[engine](model, settings, display_name or spec)


package_modules(__name__, __path__)

__all__ = [
    "DEFAULT_ENGINE",
    "AnswerModelOpener",
    "answer_engine",
    "engine_and_model",
    "engine_names",
    "open_answer_model",
]
