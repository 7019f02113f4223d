"""Ranked lists that fusion weighs beside the keyword and dense lists: one registry of signals.

A signal is a function of the query (`SignalQuery`) that returns chunk ids, best first. It
registers under its name with `@retrieval_signal(name)` in a module of this package; the
modules are found, not listed. A signal is off until it is given a weight
(`FOOTNOTE_RRF_SIGNAL_WEIGHTS`, `RetrievalParams.signals`), so a new one changes no ranking
until `footnote eval retrieval` has measured it and a setting turns it on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from footnote.core.filters import SearchFilter
from footnote.core.modules import package_modules, registering
from footnote.errors import ConfigError
from footnote.models.base import Vector
from footnote.store.catalog import Catalog


@dataclass(frozen=True)
class SignalQuery:
    """What a signal ranks chunks for, and where it may read them."""

    query: str
    language: str  # detected from the query (`footnote.core.language`)
    limit: int  # how many chunk ids fusion takes from the list
    filters: SearchFilter | None  # the chunks it may return; None: any
    catalog: Catalog
    query_vector: Vector | None  # the embedder's vector of the query, where dense search ran


Signal = Callable[[SignalQuery], list[int]]

_SIGNALS: dict[str, Signal] = {}


def retrieval_signal(name: str) -> Callable[[Signal], Signal]:
    """Register the decorated function as the signal `name`."""
    if not name or name != name.strip().lower():
        raise ValueError(f"signal name '{name}' must be non-empty lower-case text")
    return registering(_SIGNALS, name)


def signal_names() -> tuple[str, ...]:
    """Every registered signal, by name."""
    return tuple(sorted(_SIGNALS))


def signal(name: str) -> Signal:
    """The signal `name`; a `ConfigError` naming the registered ones when there is none."""
    found = _SIGNALS.get(name)
    if found is None:
        known = ", ".join(signal_names()) or "none"
        raise ConfigError(
            f"unknown retrieval signal '{name}' in FOOTNOTE_RRF_SIGNAL_WEIGHTS; registered: {known}"
        )
    return found


def signal_weights(weights: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """`RetrievalParams.signals` from the settings' weights by name, each name checked."""
    for name in weights:
        signal(name)
    return tuple(sorted(weights.items()))


package_modules(__name__, __path__)

__all__ = ["Signal", "SignalQuery", "retrieval_signal", "signal", "signal_names", "signal_weights"]
