"""The HTTP routes, one module per concern. Each parses, calls the core, and translates errors.

Every module here that has a `router` is served: `route_modules()` finds them, so a new
route is a new module and nothing else to list. Their routes carry the shared error
responses (`footnote.server.errors.ERROR_RESPONSES`) unless the module sets
`SHARED_ERRORS = False`, as the health probes do.
"""

from __future__ import annotations

from types import ModuleType

from footnote.core.modules import package_modules


def route_modules() -> list[ModuleType]:
    """Every module of this package with a `router`, by name."""
    return [module for module in package_modules(__name__, __path__) if hasattr(module, "router")]
