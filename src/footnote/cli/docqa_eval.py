"""`footnote eval answers FOLDER`: ingest a document set, ask its questions, print the figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from footnote.cli import output
from footnote.cli.progress import question_bar
from footnote.evaluation.answers import UNMEASURED
from footnote.evaluation.docqa import (
    CORPUS_FOLDER,
    DocOutcome,
    doc_report,
    evaluate_doc_questions,
    load_doc_questions,
)

_COLUMNS = {
    "questions": "n",
    "correct": "correct",
    "correct_cited": "correct+quote",
    "right_document": "right doc",
    "abstention": "abstain",
    "false_abstention": "false abstain",
    "states_distractor": "distractor",
    "says_twice": "said twice",
    "degenerate": "degenerate",
    "unsupported_shown": "unsupported shown",
    "unsupported_written": "unsupported left out",
    "complete": "complete",
    "key_point_recall": "key points",
    "words_p50": "words p50",
    "latency_p50": "p50 s",
    "latency_p90": "p90 s",
    "first_sentence_p50": "first p50 s",
    "first_sentence_p90": "first p90 s",
}


def run_doc_evaluation(
    folder: Path,
    limit: int | None,
    skip: int,
    json_output: bool,
    model: str | None = None,
    home: Path | None = None,
    per_source: int | None = None,
    questions: Path | None = None,
    corpus: Path | None = None,
) -> dict[str, Any]:
    from footnote.application import isolated_app
    from footnote.cli.progress import IngestProgress

    items = load_doc_questions(folder, limit, skip, per_source, questions, corpus)
    chosen = {"llm": model} if model else {}
    with isolated_app("footnote-eval-docs-", home, {**chosen, **UNMEASURED}) as app:
        with IngestProgress(enabled=not json_output) as progress:
            app.ingest([corpus or folder / CORPUS_FOLDER], progress.update)
        with question_bar(enabled=not json_output) as bar:
            task = bar.add_task("questions", total=len(items))

            def advance(_: DocOutcome) -> None:
                bar.advance(task)

            outcomes = evaluate_doc_questions(app.answers, items, advance)
        report = doc_report(folder, skip, app.settings, outcomes)
    if json_output:
        output.print_json(report)
    else:
        _print_table(folder.name, str(report["settings"]["llm"]), report["metrics"])
    return report


def _print_table(name: str, model: str, metrics: dict[str, dict[str, Any]]) -> None:
    """A figure a row and a kind of question a column (a terminal holds a few kinds better than
    a score of figures); figures no kind of the set has are left out."""
    table = Table(title=f"{name}: {metrics['all']['questions']} questions, {model}")
    table.add_column("")
    for kind in metrics:
        table.add_column(kind, justify="right")
    for key, label in _COLUMNS.items():
        values = [row.get(key) for row in metrics.values()]
        if any(value is not None for value in values):
            table.add_row(label, *("-" if value is None else str(value) for value in values))
    output.console.print(table)
