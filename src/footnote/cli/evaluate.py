"""`footnote eval`: measure retrieval quality on a BEIR-format dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from footnote.cli import output
from footnote.cli.options import JsonOption
from footnote.config import Settings
from footnote.evaluation.retrieval import ModeResult

eval_app = typer.Typer(help="Measure retrieval quality.", no_args_is_help=True)


@eval_app.command("retrieval")
def retrieval(
    dataset_dir: Annotated[
        Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.")
    ],
    limit_queries: Annotated[
        int | None, typer.Option("--limit-queries", min=1, help="Run only the first N judged queries.")
    ] = None,
    split: Annotated[str, typer.Option(help="Which qrels file to judge against.")] = "test",
    modes: Annotated[
        list[str] | None,
        typer.Option(
            "--mode",
            help="keyword, dense, hybrid, rerank or expanded (repeatable; default: all; rerank needs "
            "FOOTNOTE_RERANK, expanded FOOTNOTE_QUERY_EXPANSION).",
        ),
    ] = None,
    index_dir: Annotated[
        Path | None,
        typer.Option(help="Keep the index here and reuse it next time (default: a temporary folder)."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Index the corpus in isolation, run every judged query, print nDCG@10, MRR@10, Recall@10/100."""
    from footnote.application import isolated_app
    from footnote.cli.progress import IngestProgress
    from footnote.evaluation.beir import load_beir
    from footnote.evaluation.retrieval import chosen_modes, run_evaluation

    chosen = chosen_modes(modes, Settings())
    dataset = load_beir(dataset_dir, split, limit_queries)

    def show(result: ModeResult) -> None:
        if not json_output:
            output.errors.print(f"{result.mode}: nDCG@10 {result.ndcg_at_10:.4f}")

    with (
        isolated_app("footnote-eval-", index_dir) as app,
        IngestProgress(enabled=not json_output) as progress,
    ):
        summary, results = run_evaluation(app, dataset, chosen, progress.update, show)
    if json_output:
        output.print_json({**summary, "split": split})
    else:
        _print_table(dataset.name, len(dataset.queries), results)


def _print_table(name: str, queries: int, results: list[ModeResult]) -> None:
    table = Table(title=f"{name}: {queries} queries")
    for column in ("mode", "nDCG@10", "MRR@10", "Recall@10", "Recall@100", "queries/s"):
        table.add_column(column, justify="left" if column == "mode" else "right")
    for r in results:
        scores = {
            "ndcg@10": r.ndcg_at_10,
            "mrr@10": r.mrr_at_10,
            "recall@10": r.recall_at_10,
            "recall@100": r.recall_at_100,
        }
        table.add_row(r.mode, *_cells(scores), f"{r.queries_per_second:.1f}")
        # A set with queries in several languages also shows each language's figures.
        for language, by_language in r.by_language.items():
            count = int(by_language["queries"])
            label = f"  {language} ({count} {'query' if count == 1 else 'queries'})"
            table.add_row(label, *_cells(by_language), "")
    output.console.print(table)


def _cells(scores: dict[str, float]) -> list[str]:
    return [f"{scores[name]:.4f}" for name in ("ndcg@10", "mrr@10", "recall@10", "recall@100")]


AnswerSet = Annotated[
    Path,
    typer.Argument(
        help="RGB-style JSONL (query, answer, positive and negative passages), or a document set: "
        "a folder with corpus/ and questions.jsonl (question, answers, source, evidence, kind)."
    ),
]
Runs = Annotated[
    list[str] | None,
    typer.Option("--run", help="reading, unanswerable, unrelated or end_to_end (repeatable; default all)."),
]
Noise = Annotated[
    float,
    typer.Option(
        "--noise",
        min=0.0,
        max=0.99,
        help="Share of distractor passages in the reading run (RGB's noise rate; at least one "
        "positive is always given).",
    ),
]
Judge = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="Also score each citation with this support model (CrossEncoder folder or cached id, "
        "or llm:<model>): the share whose quote it finds supporting.",
    ),
]
Calibrate = Annotated[
    bool,
    typer.Option(
        "--calibrate",
        help="Answer with the abstention gate off and choose its threshold on half the questions.",
    ),
]
IndexDir = Annotated[
    Path | None,
    typer.Option(
        help="Document sets: keep the ingested corpus here and reuse it (default: a temporary folder)."
    ),
]
PerSource = Annotated[
    int | None,
    typer.Option(
        "--per-source",
        min=1,
        help="Document sets: at most N questions of each source document, spread over it.",
    ),
]
QuestionsFile = Annotated[
    Path | None,
    typer.Option(
        "--questions",
        help="Document sets: ask the questions of this file (the form of the set's questions.jsonl).",
    ),
]
Corpus = Annotated[
    Path | None,
    typer.Option(
        "--corpus",
        help="Document sets: the documents the questions are about, when the set has no corpus/ "
        "of its own (broad-dev asks about docqa-dev's).",
    ),
]


@eval_app.command("answers")
def answers(
    dataset: AnswerSet,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Use only the first N questions.")
    ] = None,
    runs: Runs = None,
    skip: Annotated[
        int, typer.Option("--skip", min=0, help="Leave out the first N questions (e.g. those used to tune).")
    ] = 0,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Answer model (registered name or GGUF path).")
    ] = None,
    passages: Annotated[int, typer.Option(min=1, max=20, help="Passages per question when given.")] = 5,
    noise: Noise = 0.6,
    judge: Judge = None,
    calibrate: Calibrate = False,
    index_dir: IndexDir = None,
    per_source: PerSource = None,
    questions: QuestionsFile = None,
    corpus: Corpus = None,
    json_output: JsonOption = False,
) -> None:
    """Answer every question and score correctness, citations, abstention and latency.

    A document set is ingested and asked end to end, and scored per kind of question: correct,
    correct with a citation quoting the answer, cited into the right document, abstention, false
    abstention, latency and first-sentence latency (p50/p90); a set of broad questions (with
    key_points) is graded by the key points found in the answer and its quotes, complete answers,
    answer length in words and unsupported sentences shown."""
    from footnote.cli.answer_eval import run_answer_evaluation
    from footnote.evaluation.docqa import is_doc_set

    if corpus is not None or is_doc_set(dataset):
        from footnote.cli.docqa_eval import run_doc_evaluation

        run_doc_evaluation(
            dataset,
            limit,
            skip,
            json_output,
            model=model,
            home=index_dir,
            per_source=per_source,
            questions=questions,
            corpus=corpus,
        )
        return

    run_answer_evaluation(
        dataset,
        limit,
        runs,
        passages,
        json_output,
        calibrate,
        skip=skip,
        model=model,
        noise=noise,
        judge_model=judge,
    )
