"""Running the answer evaluation (`footnote eval answers` on an RGB-style file): the runs asked
for, the passages pooled for the end-to-end run, an optional judge, calibration of the gates,
and the report.

The application is built by the caller with `AnswerPlan.app_settings()` over its own settings,
so every run answers as the settings configure the engine: with `--calibrate`, every gate off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from footnote.answer.judge import SupportJudge, open_judge
from footnote.application import Application
from footnote.config import Settings
from footnote.errors import FootnoteError
from footnote.evaluation.answers import (
    DEFAULT_NOISE,
    RUNS,
    UNMEASURED,
    AnswerRecord,
    Calibration,
    QuestionOutcome,
    RunResult,
    calibrate_abstention,
    evaluate_run,
    index_passages,
)
from footnote.ingest.report import Progress
from footnote.models.cpu import machine
from footnote.perplexity import scorer_opener

# The stage before the runs when the end-to-end run is asked for.
INDEXING = "indexing passages"
# Every gate off, so that each answer carries its ungated relevance and support to calibrate on.
GATES_OFF: dict[str, object] = {
    "abstain_below": 0.0,
    "quote_above": 0.0,
    "judge_threshold": 0.0,
    "relevance_floor": 0.0,
    "decline_unknown_names": False,
}


@dataclass(frozen=True)
class AnswerPlan:
    """What to measure: the runs, the passages given per question, the share of distractors
    among them, whether to calibrate the gates, and a support model that also scores each
    citation (`--judge`)."""

    runs: tuple[str, ...] = RUNS
    passages: int = 5
    noise: float = DEFAULT_NOISE
    calibrate: bool = False
    judge: str | None = None

    def __post_init__(self) -> None:
        unknown = [run for run in self.runs if run not in RUNS]
        if unknown:
            raise FootnoteError(f"unknown --run '{unknown[0]}'; use {', '.join(RUNS)}")
        if self.calibrate and not ("reading" in self.runs and {"unanswerable", "unrelated"} & set(self.runs)):
            raise FootnoteError("--calibrate needs the reading run and the unanswerable or unrelated run")

    def app_settings(self) -> dict[str, object]:
        """Settings the evaluated application is to be built with, over its own."""
        return {**UNMEASURED, **(GATES_OFF if self.calibrate else {})}


class AnswerProgress(Protocol):
    """Told as the evaluation goes: a stage begins (indexing, or a run of `total` questions), a
    batch of passages is indexed, a question is answered."""

    def stage(self, name: str, total: int | None) -> None: ...

    def indexed(self, event: Progress) -> None: ...

    def answered(self, run: str, outcome: QuestionOutcome) -> None: ...


class _Quiet:
    def stage(self, name: str, total: int | None) -> None:
        pass

    def indexed(self, event: Progress) -> None:
        pass

    def answered(self, run: str, outcome: QuestionOutcome) -> None:
        pass


@dataclass(frozen=True)
class AnswerEvaluation:
    questions: int
    settings: dict[str, Any]  # what the figures depend on
    results: list[RunResult]
    calibrations: list[Calibration]

    def to_dict(self, dataset: Path, skipped: int) -> dict[str, Any]:
        """The evaluation as `--json` prints it."""
        return {
            "calibration": [vars(calibration) for calibration in self.calibrations],
            "dataset": str(dataset),
            "skipped": skipped,
            "questions": self.questions,
            "settings": self.settings,
            "machine": machine(),
            "runs": {
                r.run: {
                    "metrics": r.metrics(),
                    "by_language": {code: part.metrics() for code, part in r.by_language().items()},
                    "questions": [vars(o) for o in r.outcomes],
                }
                for r in self.results
            },
        }


def evaluate_answers(
    app: Application,
    records: Sequence[AnswerRecord],
    plan: AnswerPlan,
    progress: AnswerProgress | None = None,
) -> AnswerEvaluation:
    """Answer `records` in every run of `plan` on `app` (built with `plan.app_settings()`), and
    with `plan.calibrate` fit each gate's threshold."""
    judged = app.settings.model_copy(update={"judge": plan.judge})
    judge = open_judge(judged, scorer_opener(judged)) if plan.judge else None
    try:
        results = _runs(app, records, plan, judge, progress or _Quiet())
    finally:
        if judge is not None:
            judge.close()
    settings = report_settings(app.settings, plan)
    fitted = calibrations(results, judged=bool(settings["verify_model"])) if plan.calibrate else []
    return AnswerEvaluation(len(records), settings, results, fitted)


def _runs(
    app: Application,
    records: Sequence[AnswerRecord],
    plan: AnswerPlan,
    judge: SupportJudge | None,
    progress: AnswerProgress,
) -> list[RunResult]:
    if "end_to_end" in plan.runs:
        progress.stage(INDEXING, None)
        index_passages(app, records, progress.indexed)
    results = []
    for run in plan.runs:
        progress.stage(run, len(records))
        results.append(
            evaluate_run(app.answers, records, run, plan.passages, progress.answered, plan.noise, judge)
        )
    return results


def calibrations(results: Sequence[RunResult], judged: bool) -> list[Calibration]:
    """Each gate's threshold fitted on runs made with every gate off: the answers and quotes
    gates (and the support gate, when a judge checks citations) against the unanswerable run,
    the relevance floor against the unrelated run."""
    by_run = {r.run: r for r in results}
    reading = by_run["reading"]
    fitted = []
    if "unanswerable" in by_run:
        gates = ("answers", "quotes", "support") if judged else ("answers", "quotes")
        fitted = [calibrate_abstention(reading, by_run["unanswerable"], gate) for gate in gates]
    if "unrelated" in by_run:
        fitted.append(calibrate_abstention(reading, by_run["unrelated"], "relevance"))
    return fitted


def report_settings(s: Settings, plan: AnswerPlan) -> dict[str, Any]:
    """The settings the figures depend on, as the report shows them."""
    return {
        "llm": s.llm,
        "llm_quantization": s.llm_quantization,
        "threads": s.threads,
        "embedder": s.embedder,
        "passages": plan.passages,
        "noise": plan.noise,
        "verify_model": s.judge,
        "judge": plan.judge,
        "abstain_below": s.abstain_below,
        "quote_above": s.quote_above,
        "verify_threshold": s.judge_threshold,
        "relevance_floor": s.relevance_floor,
        "reader": s.reader,
        "language_llm": s.language_llm,
    }
