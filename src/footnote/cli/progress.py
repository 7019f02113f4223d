"""A live progress display for ingest: files, then chunks embedded."""

from __future__ import annotations

from types import TracebackType

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from footnote.cli.output import errors
from footnote.ingest.report import Progress as PipelineProgress


class RateColumn(ProgressColumn):
    """Items per second so far: files parsed or chunks embedded, over the time since the first
    report of any stage (`since`, on the bar's clock): the embedding task appears only with its
    own first report, once the first window of chunks was already embedded."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        since = task.fields.get("since")
        if since is not None and task.start_time is not None:
            elapsed += task.start_time - since
        rate = task.completed / elapsed if elapsed > 0 else 0.0
        unit = task.fields.get("unit", "")
        return Text(f"{rate:,.0f} {unit}/s", style="dim")


class IngestProgress:
    def __init__(self, enabled: bool = True) -> None:
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            console=errors,
            disable=not enabled,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}
        self._first_report: float | None = None

    def __enter__(self) -> IngestProgress:
        self._bar.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._bar.__exit__(kind, value, trace)

    def update(self, event: PipelineProgress) -> None:
        label = "parsing files" if event.stage == "file" else "embedding chunks"
        if self._first_report is None:
            self._first_report = self._bar.get_time()
        if event.stage not in self._tasks:
            unit = "files" if event.stage == "file" else "chunks"
            self._tasks[event.stage] = self._bar.add_task(
                label, total=event.total, unit=unit, since=self._first_report
            )
        self._bar.update(self._tasks[event.stage], completed=event.done, total=event.total)


def question_bar(enabled: bool) -> Progress:
    """A bar of questions answered, on standard error, for the answer evaluations."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=errors,
        disable=not enabled,
    )
