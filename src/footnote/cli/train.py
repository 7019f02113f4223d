"""`footnote train reader`: rebuild footnote's sentence reader from the data, with a fixed seed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from footnote.cli import output
from footnote.cli.options import JsonOption
from footnote.errors import ConfigError
from footnote.models.registry import READER_FOLDER
from footnote.models.sentence_reader import BUNDLED_READER
from footnote.training.reader import train_reader
from footnote.training.reader_fit import FitParams

train_app = typer.Typer(help="Train footnote's own models.", no_args_is_help=True)
DEFAULT_SQUAD = Path("../shared/data/squad2-dev/squad-v2.0.json")


HeldOut = Annotated[
    list[str] | None,
    typer.Option(
        "--held-out",
        help="An article, or a document of the extra examples, kept out of training and scored "
        "after it (repeatable).",
    ),
]
Extra = Annotated[
    list[Path] | None,
    typer.Option("--extra", help="More examples to train on (JSON lines from scripts/reader_questions.py)."),
]
NoAnswer = Annotated[
    bool,
    typer.Option(
        "--no-answer",
        help="Also train a candidate that stands for no answer, the target of unanswerable questions.",
    ),
]
AnswerHead = Annotated[
    bool,
    typer.Option(
        "--answer-head",
        help="Train the no-answer candidate on a second head, beside the one that ranks sentences.",
    ),
]


@train_app.command("reader")
def reader(
    squad: Annotated[Path, typer.Option(help="SQuAD 2.0 JSON to train on.")] = DEFAULT_SQUAD,
    out: Annotated[
        Path | None,
        typer.Option(help="Write the reader here (default: the bundled reader's folder)."),
    ] = None,
    held_out: HeldOut = None,
    extra: Extra = None,
    epochs: Annotated[float, typer.Option(min=0.01, help="Passes over the training questions.")] = 1.0,
    max_steps: Annotated[int, typer.Option(min=0, help="Stop after this many steps (0: no limit).")] = 0,
    seed: Annotated[int, typer.Option(help="Fixes the order, the sampling and the head.")] = 13,
    start: Annotated[
        Path | None,
        typer.Option(
            help="Continue from these weights (the .pt checkpoint a training run writes), or from "
            "the shipped reader: footnote."
        ),
    ] = None,
    no_answer: NoAnswer = False,
    answer_head: AnswerHead = False,
    extra_only: Annotated[
        bool,
        typer.Option(
            help="Train on the --extra examples alone, no SQuAD article (to go on from a reader, "
            "--start, with new examples)."
        ),
    ] = False,
    report_only: Annotated[bool, typer.Option(help="Train and report; write no reader.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Train the sentence reader on SQuAD 2.0 articles and write it as footnote ships it (an int8
    ONNX graph, its tokenizer and a manifest); prints the in-sample and held-out ranking."""
    if extra_only and not extra:
        raise ConfigError("--extra-only trains on the --extra examples alone: pass at least one --extra FILE")
    if not extra_only and not squad.is_file():
        raise ConfigError(f"{squad} does not exist; pass --squad PATH to squad-v2.0.json")
    if start is not None and str(start) != BUNDLED_READER and not start.is_file():
        raise ConfigError(
            f"{start} does not exist; pass --start the .pt file a training run wrote, or "
            f"{BUNDLED_READER} for the shipped reader"
        )
    params = FitParams(
        epochs=epochs,
        max_steps=max_steps,
        seed=seed,
        start=str(start or ""),
        no_answer=no_answer,
        # The shipped reader has an answer head, and goes on training it.
        answer_head=answer_head or str(start) == BUNDLED_READER,
    )
    target = None if report_only else (out or READER_FOLDER)
    with progress_bar("training the reader", quiet=json_output) as advance:
        report = train_reader(
            None if extra_only else squad, target, held_out or (), params, progress=advance, extra=extra or ()
        )
    if json_output:
        output.print_json(report)
        return
    _print_reader_report(report, target)


def _print_reader_report(report: dict[str, Any], target: Path | None) -> None:
    """What `footnote train reader` says when it is done, for a person."""
    output.console.print(
        f"trained on {report['examples']:,} questions ({report['pairs']:,} pairs) in "
        f"{report['train_seconds']:.0f} s; loss {report['loss_first_tenth']:.3f} -> "
        f"{report['loss_last_tenth']:.3f}"
    )
    for side in ("in_sample", "held_out"):
        if side in report:
            row = report[side]
            output.console.print(
                f"{side.replace('_', ' ')}: {row['questions']} questions, best sentence answers "
                f"{row['top1']:.3f}, answerable vs not AUC {row['auc']:.3f}"
            )
    if target is not None:
        output.console.print(f"reader written to {target}; pin these hashes in models/registry.py:")
        for name, digest in report["files"].items():
            output.console.print(f"  {name}: {digest}")


@contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[Callable[[int, int, float], None]]:
    """A bar on standard error advanced by (step, total, loss); nothing when `quiet`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeElapsedColumn(),
        console=output.errors,
        disable=quiet,
    )
    with bar:
        task = bar.add_task(label, total=None, loss=0.0)

        def advance(step: int, total: int, loss: float) -> None:
            bar.update(task, completed=step, total=total, loss=loss)

        yield advance


DEFAULT_DATA = Path("../shared/data")


@train_app.command("shape")
def shape(
    data: Annotated[
        Path, typer.Option(help="The shared data folder (broad-dev, docqa-dev and squad2-dev in it).")
    ] = DEFAULT_DATA,
    out: Annotated[
        Path | None, typer.Option(help="Write the model here (default: the bundled shape model's file).")
    ] = None,
    report_only: Annotated[bool, typer.Option(help="Train and report; write no model.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Train the answer-shape model (several passages or one fact, from the question's multilingual
    embedding) and print its in-sample and cross-validated figures."""
    import numpy as np

    from footnote.answer.shape import SHAPE_FILE
    from footnote.application.models import open_language_embedder
    from footnote.config import Settings
    from footnote.models.registry import sha256_file
    from footnote.training.shape import train_shape

    if not (data / "broad-dev" / "questions.jsonl").is_file():
        raise ConfigError(f"{data} holds no broad-dev/questions.jsonl; pass --data the shared data folder")
    settings = Settings()
    embedder = open_language_embedder(settings)  # the one that reads questions for the model

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([embedder.embed_query(text) for text in texts])

    report = train_shape(data, embed, settings.language_embedder)
    target = None if report_only else (out or SHAPE_FILE)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    summary = {key: report[key] for key in ("in_sample", "cross_validated_by_document")}
    if json_output:
        output.print_json({**summary, "file": str(target) if target else None})
        return
    for side, row in summary.items():
        output.console.print(
            f"{side.replace('_', ' ')}: AUC {row['auc']:.3f}, taken as broad {row['taken_as_broad']}"
        )
    if target is not None:
        output.console.print(
            f"written to {target}; pin SHAPE_SHA256 = {sha256_file(target)!r} in answer/shape.py"
        )
