"""The `footnote` command: parse, call the core, print. Nothing else lives here."""

from __future__ import annotations

import logging
import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from footnote import __version__
from footnote.application import Application, create_app
from footnote.cli import output
from footnote.cli.bench import bench_app
from footnote.cli.collections import collections_app, keys_app
from footnote.cli.evaluate import eval_app
from footnote.cli.mcp import mcp
from footnote.cli.options import JsonOption
from footnote.cli.ppl import ppl
from footnote.cli.serve import serve
from footnote.cli.store import store_app
from footnote.cli.train import train_app
from footnote.config import Settings
from footnote.core.collections import check_collection
from footnote.errors import FootnoteError
from footnote.ingest.loaders import document_formats

app = typer.Typer(
    help="footnote: answers from your documents, every claim footnoted and checked.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
docs_app = typer.Typer(help="List and remove ingested documents.", no_args_is_help=True)
models_app = typer.Typer(help="List and verify models.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")
app.add_typer(models_app, name="models")
app.add_typer(eval_app, name="eval")
app.add_typer(bench_app, name="bench")
app.add_typer(store_app, name="store")
app.add_typer(train_app, name="train")
app.add_typer(collections_app, name="collections")
app.add_typer(keys_app, name="keys")
app.command()(ppl)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@app.callback()
def main(
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Data directory (default: $FOOTNOTE_HOME or the user data dir)."),
    ] = None,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        output.console.print(f"footnote {__version__}")
        raise typer.Exit()
    if home is not None:
        os.environ["FOOTNOTE_HOME"] = str(home)
    # FOOTNOTE_LOG_LEVEL=info shows what loads and when (models, exports), on standard error.
    level = os.environ.get("FOOTNOTE_LOG_LEVEL", "warning").upper()
    if level not in LOG_LEVELS:
        raise FootnoteError(
            f"FOOTNOTE_LOG_LEVEL={level.lower()} is not a level; use one of debug, info, warning, error"
        )
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    # httpx logs every request at info (each call to a Chroma server or an LLM backend): debug shows them.
    if level != "DEBUG":
        logging.getLogger("httpx").setLevel(logging.WARNING)


CollectionsOption = Annotated[
    list[str] | None, typer.Option("--collection", "-c", help="Only this collection (repeatable).")
]


def open_app() -> Application:
    return create_app(Settings())


def _collections(names: list[str] | None) -> tuple[str, ...] | None:
    """The collections named by --collection, checked; None when none is named (every one)."""
    return tuple(dict.fromkeys(check_collection(name) for name in names)) if names else None


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to ingest (folders recursively).")],
    json_output: JsonOption = False,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", help="Only files matching this glob (path under the folder, or name)."),
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Leave out files and folders matching this glob.")
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove documents whose files under these paths are gone.")
    ] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="After ingesting, follow the folders and apply changes.")
    ] = False,
    collection: Annotated[
        str | None,
        typer.Option(
            "--collection",
            "-c",
            help="The collection they join (default: a document keeps its own; a new one joins 'default').",
        ),
    ] = None,
) -> None:
    """Add documents to the index; unchanged files are skipped."""
    from footnote.cli.ingest import run_ingest

    run_ingest(
        open_app(),
        paths,
        include=include or [],
        exclude=exclude or [],
        prune=prune,
        watch=watch,
        json_output=json_output,
        collection=check_collection(collection) if collection is not None else None,
    )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer from your documents.")],
    json_output: JsonOption = False,
    history_file: Annotated[
        Path | None,
        typer.Option("--history", help="Earlier turns: a JSON list of {role, content} messages."),
    ] = None,
    related: Annotated[
        bool,
        typer.Option("--related", help="Suggest follow-up questions the sources answer (more model calls)."),
    ] = False,
    collections: CollectionsOption = None,
) -> None:
    """Answer a question with footnotes checked against the sources."""
    from footnote.answer.history import read_history
    from footnote.cli.chat import stream_answer

    history = read_history(history_file) if history_file else []
    footnote = open_app()
    try:
        stream_answer(footnote, question, history, json_output, related, _collections(collections))
    finally:
        footnote.close()


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Keywords or a question.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="Results to show.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, keyword or dense.")] = "hybrid",
    json_output: JsonOption = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show each retriever's rank and score and the fused score.")
    ] = False,
    include: Annotated[
        list[str] | None, typer.Option("--include", help="Only documents whose path matches this GLOB.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Leave out documents whose path matches this GLOB.")
    ] = None,
    formats: Annotated[
        list[str] | None,
        typer.Option("--format", help=f"Only this format (repeatable): {', '.join(document_formats())}."),
    ] = None,
    after: Annotated[
        str | None, typer.Option("--after", help="Only sources modified at or after this ISO date.")
    ] = None,
    before: Annotated[
        str | None, typer.Option("--before", help="Only sources modified before this ISO date.")
    ] = None,
    collections: CollectionsOption = None,
) -> None:
    """Find passages by keyword and meaning (fused)."""
    from footnote.core.filters import build_filter

    if mode not in ("hybrid", "keyword", "dense"):
        raise FootnoteError(f"unknown --mode '{mode}'; use hybrid, keyword or dense")
    filters = build_filter(include or (), exclude or (), formats or (), after, before, collections or ())
    hits = open_app().search(query, limit=limit, mode=mode, filters=filters)
    if json_output:
        rows = [{**asdict(hit), "heading_path": list(hit.heading_path)} for hit in hits]
        if explain:
            rows = [{**row, "explain": output.explanation(hit)} for row, hit in zip(rows, hits, strict=True)]
        output.print_json(rows)
    elif explain:
        output.print_explained_hits(hits)
    else:
        output.print_hits(hits)


@docs_app.command("list")
def docs_list(
    json_output: JsonOption = False,
    collections: CollectionsOption = None,
) -> None:
    """Show ingested documents."""
    documents = open_app().documents(_collections(collections))
    if json_output:
        output.print_json([asdict(doc) for doc in documents])
    else:
        output.print_documents(documents)


@docs_app.command("rm")
def docs_rm(
    documents: Annotated[list[str], typer.Argument(help="Document ids or paths.")],
    json_output: JsonOption = False,
) -> None:
    """Remove documents, their chunks and their vectors."""
    footnote = open_app()
    removed = [asdict(footnote.delete_document(doc)) for doc in documents]
    if json_output:
        output.print_json(removed)
    else:
        for doc in removed:
            output.console.print(f"removed {doc['path']} ({doc['chunk_count']} chunks)")


@models_app.command("list")
def models_list(json_output: JsonOption = False) -> None:
    """Show registered models and whether their packages are installed."""
    from footnote.models.registry import list_models

    models = list_models()
    rows: list[dict[str, Any]] = [{**asdict(m), "location": str(m.location or "")} for m in models]
    if json_output:
        output.print_json(rows)
        return
    settings = Settings()
    for row in rows:
        default = " (in use)" if row["name"] in (settings.llm, settings.embedder) else ""
        state = "installed" if row["installed"] else "[red]not installed[/]"
        output.console.print(f"[bold]{row['name']}[/]{default} {row['kind']}: {row['description']} — {state}")


@models_app.command("verify")
def models_verify(
    names: Annotated[list[str] | None, typer.Argument(help="Models to check (default: all).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Check every model file against its pinned SHA-256."""
    from footnote.models.registry import REGISTRY, verify_model

    results = []
    for name in names or list(REGISTRY):
        try:
            results.append({"name": name, "ok": True, "location": str(verify_model(name)), "error": None})
        except FootnoteError as exc:
            results.append({"name": name, "ok": False, "location": None, "error": str(exc)})
    if json_output:
        output.print_json(results)
    for result in results:
        if not json_output:
            mark = "[green]ok[/]" if result["ok"] else f"[red]FAILED[/] {result['error']}"
            output.console.print(f"{result['name']}: {mark}")
    if not all(r["ok"] for r in results):
        raise typer.Exit(code=1)


app.command()(serve)
app.command()(mcp)


@app.command()
def chat(
    history_file: Annotated[
        Path | None, typer.Option("--history", help="Start from this JSON list of {role, content} messages.")
    ] = None,
    collections: CollectionsOption = None,
) -> None:
    """Talk with your documents: follow-up questions keep the last few turns as context.

    The models are loaded once, for the whole session."""
    from footnote.cli.chat import run_chat

    run_chat(open_app, history_file, _collections(collections))


def run() -> None:
    """Entry point: known errors become one clear line and exit code 2."""
    try:
        app()
    except FootnoteError as exc:
        output.print_error(str(exc))
        raise SystemExit(2) from None
    except ValidationError as exc:
        problems = "; ".join(
            f"FOOTNOTE_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        output.print_error(f"invalid settings: {problems}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    run()
