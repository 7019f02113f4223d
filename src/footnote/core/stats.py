"""Percentiles, the one way footnote reports a latency or a score distribution."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], fraction: float, interpolate: bool = False) -> float | None:
    """The `fraction` (0 to 1) percentile of `values`, None when there are none.

    By default the nearest-rank value: the smallest value with at least `fraction` of the
    values at or below it, so it is always a value that was measured. With `interpolate`, the
    linear interpolation between the two closest ranks (the "inclusive" method of
    `statistics.quantiles`), at whole percents, for figures averaged over few runs.
    """
    if not values:
        return None
    ordered = sorted(values)
    if interpolate:
        if len(ordered) == 1:
            return ordered[0]
        percent = round(fraction * 100)
        if percent <= 0:
            return ordered[0]
        if percent >= 100:
            return ordered[-1]
        return statistics.quantiles(ordered, n=100, method="inclusive")[percent - 1]
    rank = min(max(1, math.ceil(len(ordered) * fraction)), len(ordered))
    return ordered[rank - 1]
