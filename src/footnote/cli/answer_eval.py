"""`footnote eval answers`: run the answer evaluation in an isolated data directory and print it."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from rich.progress import TaskID
from rich.table import Table

from footnote.cli import output
from footnote.cli.progress import question_bar
from footnote.evaluation.answer_runs import AnswerEvaluation, AnswerPlan
from footnote.evaluation.answers import DEFAULT_NOISE, RUNS, QuestionOutcome, RunResult, load_records
from footnote.ingest.report import Progress as PipelineProgress

_COLUMNS = {
    "correctness": "correct",
    "citation_precision": "cite prec",
    "citation_recall_sentences": "cite rec (sent)",
    "citation_recall_answers": "cite rec (ans)",
    "citation_judged": "judged",
    "unsupported_rate": "unsupported",
    "unsupported_shown": "unsupp. shown",
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
    from footnote.application import isolated_app
    from footnote.evaluation.answer_runs import evaluate_answers

    plan = AnswerPlan(tuple(runs or RUNS), passages, noise, calibrate, judge_model)
    records = load_records(dataset, limit, skip)
    chosen = {"llm": model} if model else {}
    with (
        isolated_app("footnote-eval-answers-", settings={**chosen, **plan.app_settings()}) as app,
        closing(_Bar(enabled=not json_output)) as bar,
    ):
        evaluation = evaluate_answers(app, records, plan, bar)
    if json_output:
        output.print_json(evaluation.to_dict(dataset, skip))
    else:
        _print_report(dataset.name, evaluation)


class _Bar:
    """The bar of questions answered, live from the first stage on."""

    def __init__(self, enabled: bool) -> None:
        self._bar = question_bar(enabled)
        self._task: TaskID | None = None

    def stage(self, name: str, total: int | None) -> None:
        if self._task is None:
            self._bar.start()
        self._task = self._bar.add_task(name, total=total)

    def indexed(self, event: PipelineProgress) -> None:
        assert self._task is not None
        self._bar.update(self._task, completed=event.done, total=event.total)

    def answered(self, run: str, outcome: QuestionOutcome) -> None:
        assert self._task is not None
        self._bar.advance(self._task)

    def close(self) -> None:
        if self._task is not None:
            self._bar.stop()


def _print_report(name: str, evaluation: AnswerEvaluation) -> None:
    _print_table(name, evaluation.questions, evaluation.settings["llm"], evaluation.results)
    for calibration in evaluation.calibrations:
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
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.3f}"
