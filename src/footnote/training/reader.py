"""`footnote train reader`: the sentence reader rebuilt from the data, with a fixed seed.

The examples come from the SQuAD 2.0 articles of `../shared/data/squad2-dev` (CC BY-SA 4.0).
Articles (or the extra examples' documents) named in `held_out` are kept out of training and
scored after it (the cross-validated figure); the others are scored too (the in-sample one), so
the report shows both side by side.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from footnote.models.cpu import machine
from footnote.models.registry import REGISTRY, resolve_registered
from footnote.training.reader_data import (
    ReaderExample,
    load_examples,
    split_by_group,
    squad_examples,
    squad_titles,
)
from footnote.training.reader_export import export_reader, ranking_report
from footnote.training.reader_fit import FitParams, fit_reader, save_weights, score_examples

BASE_MODEL = "minilm-l6"
LICENCE = (
    "CC BY-SA 4.0: trained on SQuAD 2.0 articles (Rajpurkar, Jia and Liang, 2018) from the "
    "CS224N split of the SQuAD 2.0 development set; weights initialised from all-MiniLM-L6-v2 (Apache-2.0)"
)
# With --extra files from scripts/reader_questions.py the reader also learns from sentences of
# Debian's manual pages and package documents (each under its own free licence, every document
# named in the file's first line) and from questions Qwen2.5-Coder-1.5B-Instruct (Apache-2.0) wrote;
# with scripts/reader_set_examples.py, from hand-written questions over the technical documents of
# ../shared/data/docqa-dev (each document under its own free licence, listed in that set's README).
EXTRA_LICENCE = (
    "; also trained on sentences of Debian manual pages and package documents, each under its own "
    "free licence (listed in the examples file's first line), with questions written by "
    "Qwen2.5-Coder-1.5B-Instruct (Apache-2.0), and on hand-written questions over the technical "
    "documents of footnote's docqa-dev set, each under its own free licence"
)


def train_reader(
    squad: Path | None,
    target: Path | None,
    held_out: Sequence[str] = (),
    params: FitParams = FitParams(),
    progress: Callable[[int, int, float], None] | None = None,
    report_limit: int = 600,
    extra: Sequence[Path] = (),
) -> dict[str, Any]:
    """Train on every article of `squad` (None: none, the extra examples alone) and every example
    of the `extra` files (`scripts/reader_questions.py` and `scripts/reader_set_examples.py` write
    them) but those of the articles or documents in `held_out`, report both sides, and write the
    reader into `target` (None: report only)."""
    base = resolve_registered(REGISTRY[BASE_MODEL])
    titles = squad_titles(squad) if squad is not None else []
    training, held = training_examples(squad, held_out, extra, params.seed)
    started = time.monotonic()
    model, losses = fit_reader(training, base, params, progress)
    seconds = time.monotonic() - started
    window = max(1, len(losses) // 10)
    report: dict[str, Any] = {
        "data": {
            "squad": str(squad) if squad is not None else None,
            "articles": [t for t in titles if t not in set(held_out)],
            "extra": [str(p) for p in extra],
        },
        "held_out_articles": list(held_out),
        "examples": len(training),
        "pairs": sum(len(e.candidates) for e in training),
        # The checkpoint it continued from by its name: a path on the training machine says nothing
        # to anyone else (`make reader` writes it as its first stage).
        "params": {**asdict(params), "start": Path(params.start).name if params.start else ""},
        "train_seconds": round(seconds, 1),
        "loss_first_tenth": round(sum(losses[:window]) / window, 4),
        "loss_last_tenth": round(sum(losses[-window:]) / window, 4),
        "machine": machine(),
    }
    in_sample = training[:: max(1, len(training) // report_limit)]
    report["in_sample"] = _report(model, base, in_sample)
    if held:
        report["held_out"] = _report(model, base, held[:: max(1, len(held) // report_limit)])
    if target is not None:
        # The trained weights are kept before the export, which may refuse them.
        checkpoint = target.parent / f"{target.name}.pt"
        save_weights(model, checkpoint)
        report["checkpoint"] = checkpoint.name  # by name, as `start` is
        licence = LICENCE + (EXTRA_LICENCE if extra else "")
        manifest = {
            "base": BASE_MODEL,
            "licence": licence,
            "no_answer": params.no_answer or params.answer_head,
            "answer_head": params.answer_head,
            "training": report,
        }
        report["files"] = export_reader(model, base, target, manifest)["files"]
    return report


def training_examples(
    squad: Path | None, held_out: Sequence[str], extra: Sequence[Path], seed: int
) -> tuple[list[ReaderExample], list[ReaderExample]]:
    """(training, held-out) examples of the SQuAD articles (None: none) and the `extra` files: an
    article or document named in `held_out` goes whole to the held-out side."""
    examples = squad_examples(squad, seed=seed) if squad is not None else []
    for path in extra:
        examples.extend(load_examples(path))
    return split_by_group(examples, held_out)


def _report(model: Any, base: Path, examples: Sequence[Any]) -> dict[str, Any]:
    scores = score_examples(model, base, examples)
    return {"questions": len(examples), **ranking_report(scores, [e.labels for e in examples])}
