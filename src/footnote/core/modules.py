"""Packages whose modules are found, not listed: loaders, answer engines, retrieval signals, routes,
and the decorators their modules register with."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TypeVar

T = TypeVar("T")


def package_modules(package: str, path: Iterable[str]) -> list[ModuleType]:
    """Every module of `package` (found on its `__path__`, `path`), imported, by module name."""
    return [importlib.import_module(f"{package}.{info.name}") for info in pkgutil.iter_modules(path)]


def registering(table: dict[str, T], name: str) -> Callable[[T], T]:
    """A decorator that enters what it decorates into `table` under `name` and returns it as it was."""

    def register(item: T) -> T:
        table[name] = item
        return item

    return register
