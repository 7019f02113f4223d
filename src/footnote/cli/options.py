"""Options several commands share, declared once so that each reads and helps alike."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
# The benchmarks write a report file and print it whole with --json.
JsonReportOption = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]
