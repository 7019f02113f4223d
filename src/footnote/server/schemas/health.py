"""The bodies of /healthz and /readyz."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Health(BaseModel):
    status: Literal["ok"]


class StoreStatus(BaseModel):
    kind: Literal["embedded", "postgresql", "chroma-server"]
    status: Literal["ok", "unavailable"]
    detail: str | None = None


class Readiness(BaseModel):
    status: Literal["ready", "loading", "failed", "unavailable"]
    detail: str | None = None
    stores: dict[str, StoreStatus]
