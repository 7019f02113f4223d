"""The `bench ppl` chart: tokens/s of each contender, its perplexity written on the bar.

A PNG through matplotlib when it is installed; otherwise an SVG drawn here.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from footnote.bench.chart import pyplot

_COLOURS = {
    "footnote": "#1f77b4",
    "footnote-f32": "#aec7e8",
    "footnote-q8_0": "#17becf",
    "llama-cpp-python": "#ff7f0e",
    "transformers": "#d62728",
}


def write_ppl_chart(report: dict[str, Any], stem: Path, title: str) -> Path:
    """Write `stem`.png (matplotlib) or `stem`.svg; return the path written."""
    rows = report["rows"]
    plt = pyplot()
    if plt is None:
        path = stem.with_suffix(".svg")
        path.write_text(_svg(rows, title), encoding="utf-8")
        return path

    figure, axes = plt.subplots(figsize=(9, 1.2 + 0.7 * len(rows)))
    labels = [row["backend"] for row in rows][::-1]
    speeds = [row["tokens_per_second"] for row in rows][::-1]
    colours = [_COLOURS.get(row["key"], "#7f7f7f") for row in rows][::-1]
    bars = axes.barh(labels, speeds, color=colours)
    for bar, row in zip(bars, rows[::-1], strict=True):
        axes.text(
            bar.get_width(),
            bar.get_y() + bar.get_height() / 2,
            f" {row['tokens_per_second']:.1f} tokens/s, PPL {row['perplexity']:.4f}",
            va="center",
        )
    axes.set(xlabel="tokens per second (higher is better)", title=title)
    axes.set_xlim(0, max(speeds) * 1.9)  # room for the longest bar's label
    figure.tight_layout()
    path = stem.with_suffix(".png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _svg(rows: list[dict[str, Any]], title: str) -> str:
    width, label_width, bar_height = 760, 300, 26
    height = 40 + bar_height * len(rows) + 30
    top = max((row["tokens_per_second"] for row in rows), default=1.0) or 1.0
    span = width - label_width - 140
    parts = [f'<text x="10" y="18" font-size="13">{escape(title)}</text>']
    for index, row in enumerate(rows):
        y = 34 + index * bar_height
        length = span * row["tokens_per_second"] / top
        colour = _COLOURS.get(row["key"], "#7f7f7f")
        parts.append(f'<text x="10" y="{y + 15}">{escape(row["backend"])}</text>')
        box = f'x="{label_width}" y="{y}" width="{length:.1f}" height="{bar_height - 6}"'
        parts.append(f'<rect {box} fill="{colour}"/>')
        parts.append(
            f'<text x="{label_width + length + 6:.1f}" y="{y + 15}">'
            f"{row['tokens_per_second']:.1f} tokens/s, PPL {row['perplexity']:.4f}</text>"
        )
    parts.append(f'<text x="{label_width}" y="{height - 8}">tokens per second (higher is better)</text>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">'
        '<rect width="100%" height="100%" fill="white"/>' + "".join(parts) + "</svg>"
    )
