"""What an ingest run reports: each file's outcome, the chunks embedded, progress as it goes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["new", "changed", "unchanged", "failed", "skipped", "removed"]
STATUSES: tuple[Status, ...] = ("new", "changed", "unchanged", "failed", "skipped", "removed")


@dataclass(frozen=True)
class FileOutcome:
    path: str
    status: Status
    chunks: int = 0
    error: str | None = None


@dataclass
class IngestReport:
    files: list[FileOutcome] = field(default_factory=list)
    chunks_embedded: int = 0
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(1 for outcome in self.files if outcome.status == status)

    @property
    def failed(self) -> list[FileOutcome]:
        return [outcome for outcome in self.files if outcome.status == "failed"]

    def summary(self) -> dict[str, int | float]:
        counts: dict[str, int | float] = {s: self.count(s) for s in STATUSES}
        counts["chunks"] = sum(o.chunks for o in self.files if o.status in ("new", "changed"))
        counts["chunks_embedded"] = self.chunks_embedded
        counts["seconds"] = round(self.seconds, 3)
        return counts


@dataclass(frozen=True)
class Progress:
    """What the pipeline reports as it goes: a file done, or a batch of chunks embedded."""

    stage: Literal["file", "embed"]
    done: int
    total: int
    outcome: FileOutcome | None = None


ProgressCallback = Callable[[Progress], None]
