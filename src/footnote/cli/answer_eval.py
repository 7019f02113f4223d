"""`footnote eval answers`: run the answer evaluation in an isolated data directory and print it."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.table import Table

from footnote.cli import output
from footnote.cli.progress import question_bar
from footnote.config import Settings
from footnote.errors import FootnoteError
from footnote.evaluation.answers import (
    DEFAULT_NOISE,
    RUNS,
    QuestionOutcome,
    RunResult,
    calibrate_abstention,
    evaluate_run,
    load_records,
)

_COLUMNS = {
    "correctness": "correct",
    "citation_precision": "cite prec",
    "citation_recall_sentences": "cite rec (sent)",
    "citation_recall_answers": "cite rec (ans)",
    "citation_judged": "judged",
    "unsupported_rate": "unsupported",
    "abstention_accuracy": "abstain acc",
    "false_abstention": "false abstain",
    "mean_seconds": "s/question",
}


def run_answer_evaluation(
    dataset: Path,
    limit: int | None,
    runs: list[str] | None,
    passages: int,
    json_output: bool,
    calibrate: bool = False,
    skip: int = 0,
    model: str | None = None,
    noise: float = DEFAULT_NOISE,
    judge_model: str | None = None,
) -> None:
    from footnote.answer.judge import open_judge
    from footnote.application import create_app
    from footnote.evaluation.answers import index_passages
    from footnote.ingest.pipeline import Progress as PipelineProgress

    chosen = runs or list(RUNS)
    unknown = [run for run in chosen if run not in RUNS]
    if unknown:
        raise FootnoteError(f"unknown --run '{unknown[0]}'; use {', '.join(RUNS)}")
    if calibrate and not ("reading" in chosen and {"unanswerable", "unrelated"} & set(chosen)):
        raise FootnoteError("--calibrate needs the reading run and the unanswerable or unrelated run")
    records = load_records(dataset, limit, skip)
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="footnote-eval-answers-") as home:
        app = create_app(Settings(home=Path(home), llm=model) if model else Settings(home=Path(home)))
        judge = None
        if judge_model:
            judge = open_judge(app.settings.model_copy(update={"judge": judge_model}))
        try:
            engine = app.answer_engine()
            # Related questions: not measured here, and one more generation per question.
            ungated = dict(abstain_below=0.0, quote_above=0.0, judge_threshold=0.0, relevance_floor=0.0)
            ungate: dict[str, Any] = {**ungated, "decline_unknown": False} if calibrate else {}
            engine = replace(engine, policy=replace(engine.policy, related_questions=False, **ungate))
            bar = question_bar(enabled=not json_output)
            with bar:
                if "end_to_end" in chosen:
                    task = bar.add_task("indexing passages", total=None)

                    def indexed(event: PipelineProgress) -> None:
                        bar.update(task, completed=event.done, total=event.total)

                    index_passages(app, records, indexed)
                for run in chosen:
                    task = bar.add_task(run, total=len(records))

                    def advance(_: str, __: QuestionOutcome, task: Any = task) -> None:
                        bar.advance(task)

                    results.append(evaluate_run(engine, records, run, passages, advance, noise, judge))
            settings = {
                "llm": app.settings.llm,
                "llm_quantization": app.settings.llm_quantization,
                "threads": app.settings.threads,
                "embedder": app.settings.embedder,
                "passages": passages,
                "noise": noise,
                "verify_model": app.settings.judge,
                "judge": judge_model,
                "abstain_below": engine.policy.abstain_below,
                "quote_above": engine.policy.quote_above,
                "verify_threshold": engine.policy.judge_threshold,
                "relevance_floor": engine.policy.relevance_floor,
                "reader": engine.policy.reader,
                "language_llm": app.settings.language_llm,
            }
        finally:
            app.close()
            if judge is not None:
                judge.close()
    calibrations = []
    if calibrate:
        by_run = {r.run: r for r in results}
        reading = by_run["reading"]
        if "unanswerable" in by_run:
            gates = ("answers", "quotes", "support") if settings["verify_model"] else ("answers", "quotes")
            calibrations = [calibrate_abstention(reading, by_run["unanswerable"], gate) for gate in gates]
        if "unrelated" in by_run:
            calibrations.append(calibrate_abstention(reading, by_run["unrelated"], "relevance"))
    if json_output:
        output.print_json(
            {
                "calibration": [vars(calibration) for calibration in calibrations],
                "dataset": str(dataset),
                "skipped": skip,
                "questions": len(records),
                "settings": settings,
                "runs": {
                    r.run: {
                        "metrics": r.metrics(),
                        "by_language": {code: part.metrics() for code, part in r.by_language().items()},
                        "questions": [vars(o) for o in r.outcomes],
                    }
                    for r in results
                },
            }
        )
    else:
        _print_table(dataset.name, len(records), settings["llm"], results)
        for calibration in calibrations:
            chosen_on = len(calibration.calibration_ids)
            output.console.print(
                f"{calibration.gate} gate threshold {calibration.threshold:.4f} (chosen on {chosen_on} "
                f"questions); held out: abstention {_cell(calibration.held_out_abstention)}, "
                f"false abstention {_cell(calibration.held_out_false_abstention)}"
            )


def _print_table(name: str, questions: int, model: object, results: list[RunResult]) -> None:
    table = Table(title=f"{name}: {questions} questions, {model}")
    table.add_column("run")
    for label in _COLUMNS.values():
        table.add_column(label, justify="right")
    for result in results:
        parts = [(result.run, result), *((f"  {code}", part) for code, part in result.by_language().items())]
        for label, part in parts:
            metrics = part.metrics()
            table.add_row(label, *[_cell(metrics[key]) for key in _COLUMNS])
    output.console.print(table)


def _cell(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.3f}"
