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
    table = Table(title=f"{name}: {metrics['all']['questions']} questions, {model}")
    table.add_column("kind")
    for label in _COLUMNS.values():
        table.add_column(label, justify="right")
    for kind, row in metrics.items():
        table.add_row(kind, *("-" if row[key] is None else str(row[key]) for key in _COLUMNS))
    output.console.print(table)
