"""Scoped API keys: made once, shown once, kept in the catalog only as their SHA-256.

A key is 32 random bytes (URL-safe base64 after `fn_`), so one round of SHA-256 keeps it as
safe as a slow hash would: there is nothing to guess. Every replica reads the same catalog,
so a key made or revoked on one is seen by all at the next request.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Sequence

from footnote.core.collections import Access, check_collection
from footnote.errors import NotFoundError, QueryError
from footnote.store.catalog import Catalog
from footnote.store.records import KeyRecord

KEY_PREFIX = "fn_"


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(catalog: Catalog, name: str, read: Sequence[str], write: Sequence[str] = ()) -> str:
    """A new key called `name` that reads `read` and writes `write` (which it may read too);
    returns the key, which is stored only as its hash."""
    check_collection(name)  # key names follow the same rule
    if not read and not write:
        raise QueryError(f"key {name!r} would open nothing; give it --read A[,B] and/or --write A")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    readable = tuple(dict.fromkeys([*map(check_collection, read), *map(check_collection, write)]))
    catalog.add_key(KeyRecord(name, key_hash(key), readable, tuple(write), time.time()))
    return key


def revoke_key(catalog: Catalog, name: str) -> None:
    if not catalog.revoke_key(name):
        raise NotFoundError(f"no key named {name!r}; `footnote keys list` shows them")


def key_access(catalog: Catalog, presented: str) -> Access | None:
    """What the key `presented` opens, None when the catalog holds no such key."""
    if not presented.startswith(KEY_PREFIX):
        return None
    record = catalog.key_by_hash(key_hash(presented))
    if record is None:
        return None
    return Access.scoped(record.name, record.read, record.write)
