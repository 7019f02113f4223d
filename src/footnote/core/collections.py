"""Collections: every document belongs to one, and a caller reads and writes only some.

A collection is a name (`default` unless one is given at ingest). An `Access` says which
collections a caller may read and which it may write: everything for the keys of
FOOTNOTE_API_KEYS and for a server without keys, a named few for a scoped key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from footnote.errors import NotFoundError, QueryError

DEFAULT_COLLECTION = "default"
# Letters of any script, digits, "_", "." and "-", starting with a letter or digit: safe as a folder name.
_NAME = re.compile(r"[^\W_][\w.-]{0,63}")


def check_collection(name: str) -> str:
    """`name` when it is a valid collection name, else a QueryError naming the rule."""
    if not _NAME.fullmatch(name):
        raise QueryError(
            f"collection name {name!r} refused: use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (no spaces or slashes)"
        )
    return name


def parse_collections(text: str) -> tuple[str, ...]:
    """Collection names from a comma-separated list (`a,b`), each checked; duplicates dropped."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    return tuple(dict.fromkeys(check_collection(name) for name in names))


@dataclass(frozen=True)
class Access:
    """What a caller may read and write: None is every collection."""

    read: frozenset[str] | None = None
    write: frozenset[str] | None = None
    name: str = ""  # the key's name, for logs; "" for an admin key or no key

    @classmethod
    def scoped(cls, name: str, read: Iterable[str], write: Iterable[str]) -> Access:
        writable = frozenset(write)
        # A key that may write a collection may read it too.
        return cls(frozenset(read) | writable, writable, name)

    @property
    def everything(self) -> bool:
        return self.read is None

    def can_read(self, collection: str) -> bool:
        return self.read is None or collection in self.read

    def can_write(self, collection: str) -> bool:
        return self.write is None or collection in self.write

    def readable(self, requested: Sequence[str] | None) -> tuple[str, ...] | None:
        """The collections a request may search: those it names (all readable when it names
        none; None for every collection). A named collection the caller cannot read is not
        found, the same as one that does not exist."""
        if not requested:
            return None if self.read is None else tuple(sorted(self.read))
        names = tuple(dict.fromkeys(check_collection(name) for name in requested))
        hidden = [name for name in names if not self.can_read(name)]
        if hidden:
            raise NotFoundError(f"no collection {hidden[0]!r}; GET /v1/collections lists those you can read")
        return names


EVERYTHING = Access()
