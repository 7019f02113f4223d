"""Log-softmax of the target token only, row block by row block (numpy, no per-vocab Python)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_ROWS_PER_BLOCK = 32  # 32 x 49k float32 = 6 MB of scratch: stays in cache, never a full copy


def target_logprobs(logits: npt.NDArray[np.float32], targets: npt.NDArray[np.intc]) -> list[float]:
    """log softmax(logits[i])[targets[i]] for every row i, computed in float64 sums."""
    rows = logits.shape[0]
    out = np.empty(rows, dtype=np.float64)
    scratch = np.empty((min(rows, _ROWS_PER_BLOCK), logits.shape[1]), dtype=np.float32)
    for start in range(0, rows, _ROWS_PER_BLOCK):
        block = logits[start : start + _ROWS_PER_BLOCK]
        n = block.shape[0]
        peak = block.max(axis=1)
        work = scratch[:n]
        np.subtract(block, peak[:, None], out=work)
        np.exp(work, out=work)
        log_total = np.log(work.sum(axis=1, dtype=np.float64))
        picked = block[np.arange(n), targets[start : start + n]].astype(np.float64)
        out[start : start + n] = picked - peak.astype(np.float64) - log_total
    return out.tolist()


def top_logprobs(
    logits: npt.NDArray[np.float32], targets: npt.NDArray[np.intc], n: int
) -> tuple[list[float], list[list[tuple[int, float]]]]:
    """The target's log-probability and the `n` most likely tokens (id, log-probability) of each row."""
    chosen = target_logprobs(logits, targets)
    tops: list[list[tuple[int, float]]] = []
    for row, logprob, target in zip(logits, chosen, targets.tolist(), strict=True):
        normaliser = float(row[target]) - logprob  # log of the row's softmax denominator
        ids = np.argpartition(row, -n)[-n:] if n < row.shape[0] else np.arange(row.shape[0])
        ids = ids[np.argsort(-row[ids], kind="stable")]
        tops.append([(int(i), float(row[i]) - normaliser) for i in ids])
    return chosen, tops
