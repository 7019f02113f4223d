"""`footnote eval`: measure retrieval quality on a BEIR-format dataset."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from footnote.cli import output
from footnote.config import Settings
from footnote.errors import FootnoteError
from footnote.evaluation.retrieval import EXPANDED_MODE, MODES, RERANK_MODE, ModeResult

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
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Index the corpus in isolation, run every judged query, print nDCG@10, MRR@10, Recall@10/100."""
    from footnote.application import create_app
    from footnote.cli.progress import IngestProgress
    from footnote.evaluation.beir import load_beir
    from footnote.evaluation.retrieval import run_evaluation

    settings = Settings()
    reranking, expanding = settings.rerank != "none", settings.query_expansion > 0
    chosen = modes or [*MODES, *([RERANK_MODE] if reranking else []), *([EXPANDED_MODE] if expanding else [])]
    unknown = [mode for mode in chosen if mode not in (*MODES, RERANK_MODE, EXPANDED_MODE)]
    if unknown:
        raise FootnoteError(f"unknown --mode '{unknown[0]}'; use keyword, dense, hybrid, rerank or expanded")
    if RERANK_MODE in chosen and not reranking:
        raise FootnoteError("--mode rerank needs a reranker: set FOOTNOTE_RERANK to cross-encoder or llm")
    if EXPANDED_MODE in chosen and not expanding:
        raise FootnoteError("--mode expanded needs FOOTNOTE_QUERY_EXPANSION above 0 (e.g. 0.3)")
    dataset = load_beir(dataset_dir, split, limit_queries)

    def show(result: ModeResult) -> None:
        if not json_output:
            output.errors.print(f"{result.mode}: nDCG@10 {result.ndcg_at_10:.4f}")

    with ExitStack() as stack:
        home = index_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="footnote-eval-")))
        app = create_app(Settings(home=home))
        stack.callback(app.close)
        with IngestProgress(enabled=not json_output) as progress:
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


@eval_app.command("answers")
def answers(
    dataset: Annotated[
        Path,
        typer.Argument(
            help="RGB-style JSONL (query, answer, positive and negative passages), or a document set: "
            "a folder with corpus/ and questions.jsonl (question, answers, source, evidence, kind)."
        ),
    ],
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Use only the first N questions.")
    ] = None,
    runs: Annotated[
        list[str] | None,
        typer.Option(
            "--run", help="reading, unanswerable, unrelated or end_to_end (repeatable; default all)."
        ),
    ] = None,
    skip: Annotated[
        int, typer.Option("--skip", min=0, help="Leave out the first N questions (e.g. those used to tune).")
    ] = 0,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Answer model (registered name or GGUF path).")
    ] = None,
    passages: Annotated[int, typer.Option(min=1, max=20, help="Passages per question when given.")] = 5,
    noise: Annotated[
        float,
        typer.Option(
            "--noise",
            min=0.0,
            max=0.99,
            help="Share of distractor passages in the reading run (RGB's noise rate; at least one "
            "positive is always given).",
        ),
    ] = 0.6,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="Also score each citation with this support model (CrossEncoder folder or cached id, "
            "or llm:<model>): the share whose quote it finds supporting.",
        ),
    ] = None,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate",
            help="Answer with the abstention gate off and choose its threshold on half the questions.",
        ),
    ] = False,
    index_dir: Annotated[
        Path | None,
        typer.Option(
            help="Document sets: keep the ingested corpus here and reuse it (default: a temporary folder)."
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Answer every question and score correctness, citations, abstention and latency.

    A document set is ingested and asked end to end, and scored per kind of question: correct,
    correct with a citation quoting the answer, cited into the right document, abstention, false
    abstention, latency and first-sentence latency (p50/p90)."""
    from footnote.cli.answer_eval import run_answer_evaluation
    from footnote.evaluation.docqa import is_doc_set

    if is_doc_set(dataset):
        from footnote.cli.docqa_eval import run_doc_evaluation

        run_doc_evaluation(dataset, limit, skip, json_output, model=model, home=index_dir)
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
