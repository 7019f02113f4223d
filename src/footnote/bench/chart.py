"""The load chart: latency percentiles, achieved QPS and the server's memory against the offered rate.

A PNG through matplotlib when it is installed; otherwise an SVG drawn here, so the
benchmark needs no plotting library.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from footnote.bench.load import StepResult

_COLOURS = {
    "first token p50": "#1f77b4",
    "first token p99": "#aec7e8",
    "first sentence p50": "#ff7f0e",
    "first sentence p99": "#ffbb78",
    "e2e p50": "#d62728",
    "e2e p99": "#ff9896",
    # Each request class of a mix, apart.
    "interactive e2e p99": "#2ca02c",
    "api e2e p99": "#17becf",
    "batch e2e p99": "#7f7f7f",
}


def _series(steps: Sequence[StepResult]) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = {name: [] for name in _COLOURS}
    for step in steps:
        for request_class, figures in step.by_class.items():
            p99 = figures["latency_s"]["p99"]
            if p99 is not None and f"{request_class} e2e p99" in series:
                series[f"{request_class} e2e p99"].append((step.offered_qps, p99))
        measures = (
            ("first token", step.first_token_s),
            ("first sentence", step.first_sentence_s),
            ("e2e", step.latency_s),
        )
        for name, values in measures:
            for q in ("p50", "p99"):
                value = values[q]
                if value is not None:
                    series[f"{name} {q}"].append((step.offered_qps, value))
    return series


_MEMORY_COLOURS = {"RSS at the end": "#8c564b", "RSS peak": "#c49c94"}


def _memory(steps: Sequence[StepResult]) -> dict[str, list[tuple[float, float]]]:
    """The server's resident memory in MiB at each offered rate, where it was read."""
    end = [(s.offered_qps, s.rss_bytes / 2**20) for s in steps if s.rss_bytes is not None]
    peak = [(s.offered_qps, s.rss_peak_bytes / 2**20) for s in steps if s.rss_peak_bytes is not None]
    return {"RSS at the end": end, "RSS peak": peak}


def pyplot() -> Any | None:
    """matplotlib.pyplot drawing off screen, or None where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_chart(steps: Sequence[StepResult], stem: Path, title: str) -> Path:
    """Write `stem`.png (matplotlib) or `stem`.svg; return the path written."""
    plt = pyplot()
    if plt is None:
        path = stem.with_suffix(".svg")
        path.write_text(_svg(steps, title), encoding="utf-8")
        return path

    figure, (latency, qps, memory) = plt.subplots(1, 3, figsize=(15, 4))
    for name, points in _series(steps).items():
        if points:
            latency.plot(*zip(*points, strict=True), marker="o", label=name, color=_COLOURS[name])
    latency.set(xlabel="offered QPS", ylabel="seconds", title="latency of answered requests")
    latency.legend()
    offered = [s.offered_qps for s in steps]
    qps.plot(offered, [s.achieved_qps for s in steps], marker="o", label="achieved")
    qps.plot(offered, offered, linestyle="--", color="grey", label="offered")
    qps.plot(offered, [s.reject_rate * s.offered_qps for s in steps], marker="x", label="429 per s")
    qps.set(xlabel="offered QPS", ylabel="QPS", title="throughput")
    qps.legend()
    for name, points in _memory(steps).items():
        if points:
            memory.plot(*zip(*points, strict=True), marker="o", label=name, color=_MEMORY_COLOURS[name])
    memory.set(xlabel="offered QPS", ylabel="MiB", title="server memory")
    memory.set_ylim(bottom=0)
    memory.legend()
    figure.suptitle(title)
    figure.tight_layout()
    path = stem.with_suffix(".png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _svg(steps: Sequence[StepResult], title: str) -> str:
    width, height, pad = 460, 300, 50
    offered = [s.offered_qps for s in steps] or [1.0]
    qps_points = {
        "achieved": [(s.offered_qps, s.achieved_qps) for s in steps],
        "offered": [(s.offered_qps, s.offered_qps) for s in steps],
        "429 per s": [(s.offered_qps, s.reject_rate * s.offered_qps) for s in steps],
    }
    qps_colours = {"achieved": "#2ca02c", "offered": "#999999", "429 per s": "#9467bd"}
    panels = [
        _panel(_series(steps), _COLOURS, "latency (s) vs offered QPS", max(offered), 0, width, height, pad),
        _panel(qps_points, qps_colours, "QPS vs offered QPS", max(offered), width, width, height, pad),
        _panel(_memory(steps), _MEMORY_COLOURS, "server MiB", max(offered), 2 * width, width, height, pad),
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * width}" height="{height + 30}" '
        'font-family="sans-serif" font-size="11">'
        f'<rect width="100%" height="100%" fill="white"/><text x="10" y="16" font-size="13">{title}</text>'
        + "".join(panels)
        + "</svg>"
    )


def _panel(
    series: dict[str, list[tuple[float, float]]],
    colours: dict[str, str],
    label: str,
    x_max: float,
    left: int,
    width: int,
    height: int,
    pad: int,
) -> str:
    y_max = max((y for points in series.values() for _, y in points), default=1.0) or 1.0
    top = 30

    def at(x: float, y: float) -> str:
        px = left + pad + (width - 2 * pad) * (x / x_max if x_max else 0)
        py = top + (height - pad) - (height - pad - 10) * (y / y_max)
        return f"{px:.1f},{py:.1f}"

    parts = [
        f'<text x="{left + pad}" y="{top}">{label}</text>',
        f'<polyline fill="none" stroke="black" points="{at(0, y_max)} {at(0, 0)} {at(x_max, 0)}"/>',
        f'<text x="{left + pad - 5}" y="{top + 12}" text-anchor="end">{y_max:.3g}</text>',
        f'<text x="{left + width - pad}" y="{top + height - pad + 14}" text-anchor="end">{x_max:.3g}</text>',
    ]
    for row, (name, points) in enumerate(series.items()):
        if not points:
            continue
        coords = " ".join(at(x, y) for x, y in points)
        parts.append(f'<polyline fill="none" stroke="{colours[name]}" stroke-width="2" points="{coords}"/>')
        parts.append(
            f'<text x="{left + width - pad}" y="{top + 14 * (row + 1)}" fill="{colours[name]}" '
            f'text-anchor="end">{name}</text>'
        )
    return "".join(parts)


def write_bars(bars: Sequence[tuple[str, float]], stem: Path, title: str, unit: str) -> Path:
    """Write a horizontal bar chart of `bars` (label, value in `unit`) to `stem`.png (matplotlib)
    or `stem`.svg; return the path written."""
    plt = pyplot()
    if plt is None:
        path = stem.with_suffix(".svg")
        path.write_text(_svg_bars(bars, title, unit), encoding="utf-8")
        return path
    figure, axes = plt.subplots(figsize=(8, 0.6 * len(bars) + 1.4))
    labels = [label for label, _ in bars][::-1]
    values = [value for _, value in bars][::-1]
    drawn = axes.barh(labels, values, color="#1f77b4")
    axes.bar_label(drawn, labels=[f"{value:.4g}" for value in values], padding=3)
    axes.set(xlabel=unit, title=title)
    axes.set_xlim(0, max(values, default=1.0) * 1.18 or 1.0)
    figure.tight_layout()
    path = stem.with_suffix(".png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _svg_bars(bars: Sequence[tuple[str, float]], title: str, unit: str) -> str:
    width, row, left = 640, 26, 220
    top = 40
    largest = max((value for _, value in bars), default=1.0) or 1.0
    parts = [f'<text x="10" y="20" font-size="13">{title} ({unit})</text>']
    for index, (label, value) in enumerate(bars):
        y = top + index * row
        length = (width - left - 80) * value / largest
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{label}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{row - 6}" fill="#1f77b4"/>')
        parts.append(f'<text x="{left + length + 4:.1f}" y="{y + 15}">{value:.4g}</text>')
    height = top + row * len(bars) + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>'
        + "".join(parts)
        + "</svg>"
    )
