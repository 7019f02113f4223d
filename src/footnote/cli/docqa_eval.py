"""`footnote eval answers FOLDER`: ingest a document set, ask its questions, print the figures."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.table import Table

from footnote.cli import output
from footnote.cli.progress import question_bar
from footnote.config import Settings
from footnote.evaluation.docqa import (
    CORPUS_FOLDER,
    DocOutcome,
    evaluate_doc_questions,
    load_doc_questions,
    metrics_by_kind,
)

_COLUMNS = {
    "questions": "n",
    "correct": "correct",
    "correct_cited": "correct+quote",
    "right_document": "right doc",
    "abstention": "abstain",
    "false_abstention": "false abstain",
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
) -> dict[str, Any]:
    from footnote.application import create_app
    from footnote.cli.progress import IngestProgress

    items = load_doc_questions(folder, limit, skip)
    with ExitStack() as stack:
        data = home or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="footnote-eval-docs-")))
        settings = Settings(home=data, llm=model) if model else Settings(home=data)
        app = create_app(settings)
        stack.callback(app.close)
        with IngestProgress(enabled=not json_output) as progress:
            app.ingest([folder / CORPUS_FOLDER], progress.update)
        engine = app.answer_engine()
        engine = replace(engine, policy=replace(engine.policy, related_questions=False))  # not measured here
        bar = question_bar(enabled=not json_output)
        with bar:
            task = bar.add_task("questions", total=len(items))

            def advance(_: DocOutcome) -> None:
                bar.advance(task)

            outcomes = evaluate_doc_questions(engine, items, advance)
        report: dict[str, Any] = {
            "dataset": str(folder),
            "skipped": skip,
            "settings": {
                "llm": app.settings.llm,
                "llm_quantization": app.settings.llm_quantization,
                "embedder": app.settings.embedder,
                "top_k": app.settings.top_k,
                "reader": app.settings.reader,
                "evidence_tokens": app.settings.evidence_tokens,
            },
            "metrics": metrics_by_kind(outcomes),
            "questions": [vars(o) for o in outcomes],
        }
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
