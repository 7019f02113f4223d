"""A whole load run: the ladder of rates, then the JSON report and the chart."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from footnote.bench.chart import write_chart
from footnote.bench.load import LoadTarget, StepResult, run_step, saturation
from footnote.bench.queries import BenchQuery
from footnote.models.cpu import cpu_description


@dataclass(frozen=True)
class LoadPlan:
    rates: Sequence[float]
    step_seconds: float
    seed: int = 0
    label: str = "load"


def run_ladder(
    target: LoadTarget,
    queries: Sequence[BenchQuery],
    plan: LoadPlan,
    rss: Callable[[], int | None],
    on_step: Callable[[StepResult], None] | None = None,
) -> list[StepResult]:
    rng, classes = random.Random(plan.seed), random.Random(plan.seed + 1)
    steps = []
    for rate in plan.rates:
        step = asyncio.run(run_step(target, queries, rate, plan.step_seconds, rng, rss, classes))
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return steps


def write_report(
    steps: Sequence[StepResult], target: LoadTarget, plan: LoadPlan, queries: Sequence[BenchQuery], out: Path
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, int] = {}
    for query in queries:
        kinds[query.kind] = kinds.get(query.kind, 0) + 1
    report: dict[str, Any] = {
        "label": plan.label,
        "url": target.url,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            **cpu_description(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "step_seconds": plan.step_seconds,
        "max_tokens": target.max_tokens,
        "mix": dict(target.mix),
        "queries": kinds,
        "summary": saturation(steps),
        "steps": [step.to_dict() for step in steps],
    }
    json_path = out / f"{plan.label}.json"
    json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    chart = write_chart(steps, out / plan.label, f"footnote bench load: {plan.label} ({target.url})")
    return json_path, chart
