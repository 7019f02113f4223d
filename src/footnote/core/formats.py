"""The formats a stored document can have: one registry, filled by the loaders that make them.

Each loader registers the formats of the documents it makes (`footnote.ingest.loaders`);
everything that lists formats to a user reads `document_formats()`: the formats a search
filter accepts and the `--format` help of `footnote search`. A new loader is thus
searchable by its format the moment it is registered, with no list to update by hand.
"""

from __future__ import annotations

_FORMATS: dict[str, None] = {}  # insertion-ordered set: the order loaders were registered in


def register_format(name: str) -> None:
    """Record that documents of format `name` can be stored (registering twice is harmless)."""
    if not name or name != name.strip().lower():
        raise ValueError(f"format name '{name}' must be non-empty lower-case text without spaces")
    _FORMATS[name] = None


def document_formats() -> tuple[str, ...]:
    """Every registered format, in registration order."""
    return tuple(_FORMATS)
