"""Packages whose modules are found, not listed: loaders, answer engines, retrieval signals, routes."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType


def package_modules(package: str, path: Iterable[str]) -> list[ModuleType]:
    """Every module of `package` (found on its `__path__`, `path`), imported, by module name."""
    return [importlib.import_module(f"{package}.{info.name}") for info in pkgutil.iter_modules(path)]
