"""`footnote ingest`: one pass over files and folders, or a pass and then `--watch`."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from pathlib import Path

import typer
from rich.markup import escape

from footnote.application import Application
from footnote.cli import output
from footnote.ingest.report import IngestReport

_MARKS = {"new": "+", "changed": "~", "removed": "-", "unchanged": "=", "skipped": "·", "failed": "!"}


def report_json(report: IngestReport) -> dict[str, object]:
    return {"summary": report.summary(), "files": [asdict(f) for f in report.files]}


def print_report(report: IngestReport) -> None:
    """One line per file that failed or was skipped, then the summary line."""
    for outcome in report.files:
        if outcome.status == "failed":
            output.print_error(f"{outcome.path}: {outcome.error}")
        elif outcome.status == "skipped":
            output.errors.print(f"[dim]skipped {escape(outcome.path)}: {escape(outcome.error or '')}[/]")
    s = report.summary()
    extra = "".join(f", {s[k]} {k}" for k in ("skipped", "removed") if s[k])
    output.console.print(
        f"[bold]{s['new']}[/] new, [bold]{s['changed']}[/] changed, {s['unchanged']} unchanged, "
        f"[{'red' if s['failed'] else 'dim'}]{s['failed']} failed[/]{extra}; "
        f"{s['chunks_embedded']} chunks embedded in {s['seconds']:.1f} s"
    )


def print_changes(report: IngestReport, json_output: bool) -> None:
    """What one batch of watched changes did: a line per file (or one JSON line)."""
    if json_output:
        output.console.print(json.dumps(report_json(report)), soft_wrap=True, markup=False, highlight=False)
        return
    for outcome in report.files:
        if outcome.status == "failed":
            output.print_error(f"{outcome.path}: {outcome.error}")
        elif outcome.status != "unchanged":
            chunks = f" ({outcome.chunks} chunks)" if outcome.chunks else ""
            output.console.print(f"{_MARKS[outcome.status]} {escape(outcome.path)}{chunks}")


def run_ingest(
    footnote: Application,
    paths: list[Path],
    *,
    include: list[str],
    exclude: list[str],
    prune: bool,
    watch: bool,
    json_output: bool,
    collection: str | None = None,
) -> None:
    from footnote.cli.progress import IngestProgress

    with IngestProgress(enabled=not json_output) as progress:
        report = footnote.ingest(
            paths, progress.update, include=include, exclude=exclude, prune=prune, collection=collection
        )
    if json_output:
        if watch:
            print_changes(report, json_output=True)
        else:
            output.print_json(report_json(report))
    else:
        print_report(report)
    if watch:
        _watch(footnote, paths, include, exclude, json_output, collection)
        return
    if report.failed:
        raise typer.Exit(code=1 if report.count("failed") < len(report.files) else 2)


def _watch(
    footnote: Application,
    paths: list[Path],
    include: list[str],
    exclude: list[str],
    json_output: bool,
    collection: str | None,
) -> None:
    from footnote.ingest.watch import follow

    folders = [path for path in paths if path.is_dir()]
    if not folders:
        raise typer.BadParameter("--watch follows folders; name at least one folder")
    if not json_output:
        names = ", ".join(str(folder) for folder in folders)
        output.errors.print(f"[dim]watching {escape(names)} for changes; Ctrl-C stops[/]")
    stop = threading.Event()
    try:
        follow(
            footnote.ingestor(include, exclude, collection),
            folders,
            lambda r: print_changes(r, json_output),
            stop,
        )
    except KeyboardInterrupt:
        stop.set()
