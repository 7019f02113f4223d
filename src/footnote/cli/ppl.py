"""`footnote ppl`: perplexity of a file (or stdin) under one model, or a table comparing several."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Annotated, BinaryIO

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from footnote.cli import output
from footnote.cli.options import JsonOption
from footnote.config import Settings
from footnote.errors import FootnoteError
from footnote.models.gguf import answer_model_spec
from footnote.perplexity import (
    PROTOCOLS,
    PerplexityResult,
    ScoringOptions,
    ScoringProgress,
    TokenScore,
    TokenSink,
    iter_text,
    open_perplexity_scorer,
    score_text,
)
from footnote.perplexity.runner import DEFAULT_CONTEXT, ProtocolName


class _CountingStream:
    """Wraps a binary stream to know how many bytes the scorer has pulled so far."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.position = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self.position += len(data)
        return data


class _ScoringBar:
    """A progress bar on stderr: bytes of the file, or tokens when --max-tokens caps the run."""

    def __init__(self, enabled: bool) -> None:
        columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[status]}"))
        self.bar = Progress(*columns, TimeElapsedColumn(), console=output.errors, disable=not enabled)
        self._task: TaskID | None = None
        self._stream: _CountingStream | None = None
        self._max_tokens: int | None = None

    def start(self, label: str, stream: _CountingStream, size: int | None, max_tokens: int | None) -> None:
        self._stream, self._max_tokens = stream, max_tokens
        total = max_tokens or size
        self._task = self.bar.add_task(label, total=total, status="")

    def update(self, event: ScoringProgress) -> None:
        if self._task is None or self._stream is None:
            return
        done = event.tokens_read if self._max_tokens else self._stream.position
        status = f"{event.tokens_scored:,} tokens scored"
        self.bar.update(self._task, completed=done, status=status)


@contextmanager
def _input_file(file: str, copies_needed: int) -> Iterator[tuple[Path | None, str]]:
    """The path to read (None: read stdin once) and a name for messages; stdin is spooled if read twice."""
    if file != "-":
        path = Path(file)
        if not path.is_file():
            raise FootnoteError(f"{file} is not a file; give a text file or - for standard input")
        yield path, file
        return
    if copies_needed <= 1:
        yield None, "standard input"
        return
    with tempfile.TemporaryDirectory(prefix="footnote-ppl-") as folder:
        spooled = Path(folder) / "stdin.txt"
        with spooled.open("wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle, 1 << 20)
        yield spooled, "standard input"


def _token_writer(handle: IO[str], model: str) -> TokenSink:
    def write(score: TokenScore) -> None:
        record = {
            "model": model,
            "index": score.index,
            "token_id": score.token_id,
            "text": score.text,
            "offset": score.offset,
            "logprob": score.logprob,
        }
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    return write


def _score_one(
    spec: str,
    path: Path | None,
    name: str,
    options: ScoringOptions,
    settings: Settings,
    bar: _ScoringBar,
    tokens_out: IO[str] | None,
) -> PerplexityResult:
    context = options.context_length or DEFAULT_CONTEXT
    with ExitStack() as stack:
        scorer = stack.enter_context(open_perplexity_scorer(spec, settings, context_length=context))
        raw: BinaryIO = stack.enter_context(path.open("rb")) if path else sys.stdin.buffer
        stream = _CountingStream(raw)
        size = path.stat().st_size if path else None
        bar.start(f"scoring with {escape(spec)}", stream, size, options.max_tokens)
        on_token = _token_writer(tokens_out, spec) if tokens_out else None
        pieces = iter_text(stream, name)
        return score_text(scorer, pieces, options, on_token, bar.update, name)


def _describe_protocol(result: PerplexityResult) -> str:
    p = result.protocol
    text = f"protocol {p.name}, context {p.context_length}"
    text += f", stride {p.stride}" if p.name == "hf" else ", second half of each chunk scored"
    text += f", BOS {'yes' if p.bos else 'no'}"
    return text + (f", first {p.max_tokens:,} tokens" if p.max_tokens else "")


def _print_one(result: PerplexityResult) -> None:
    pm = f" ± {result.perplexity_stderr:.4f}" if result.perplexity_stderr is not None else ""
    nll_pm = f" ± {result.nll_stderr:.5f}" if result.nll_stderr is not None else ""
    output.console.print(f"[bold]{escape(result.model)}[/] [dim]({_describe_protocol(result)})[/]")
    output.console.print(
        f"tokens scored  {result.tokens_scored:,} of {result.tokens_read:,} ({result.windows} windows)"
    )
    output.console.print(f"mean NLL       {result.nll_mean:.5f}{nll_pm} nats/token")
    output.console.print(f"perplexity     [bold]{result.perplexity:.4f}[/]{pm}")
    output.console.print(f"speed          {result.tokens_per_second:,.0f} tokens/s ({result.seconds:.1f} s)")


def _print_table(results: list[PerplexityResult]) -> None:
    base = results[0].perplexity
    table = Table("model")
    for column in ("tokens scored", "mean NLL", "PPL", "± SE", "Δ PPL", "tokens/s"):
        table.add_column(column, justify="right")
    for r in results:
        se = f"{r.perplexity_stderr:.4f}" if r.perplexity_stderr is not None else "-"
        delta = f"{100 * (r.perplexity / base - 1):+.2f}%"
        table.add_row(
            escape(r.model),
            f"{r.tokens_scored:,}",
            f"{r.nll_mean:.5f}",
            f"{r.perplexity:.4f}",
            se,
            delta,
            f"{r.tokens_per_second:,.0f}",
        )
    output.console.print(table)
    output.console.print(f"[dim]{_describe_protocol(results[0])}[/]")
    if len({r.tokens_scored for r in results}) > 1:
        output.console.print(
            "[yellow]the models tokenize differently: their perplexities are per different tokens[/]"
        )


def ppl(
    file: Annotated[str, typer.Argument(help="UTF-8 text file to score, or - for standard input.")],
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="Registered name, GGUF path, NAME@q8_0, NAME@f32, transformers:NAME, or a server "
            "http://host:port/v1 (add #model to pick one); repeat to compare.",
        ),
    ] = None,
    context_length: Annotated[
        int | None,
        typer.Option(
            "--context-length", "-c", min=2, help=f"Window size in tokens (default {DEFAULT_CONTEXT})."
        ),
    ] = None,
    stride: Annotated[
        int | None,
        typer.Option("--stride", min=1, help="hf: tokens between window starts (default: no overlap)."),
    ] = None,
    protocol: Annotated[
        str, typer.Option("--protocol", help="hf (sliding window) or llama.cpp (chunks).")
    ] = "hf",
    tokens: Annotated[
        Path | None,
        typer.Option("--tokens", help="Write each scored token's log-probability to this JSONL file."),
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", min=2, help="Score only the first N tokens.")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Perplexity of a text: tokens scored, mean NLL, PPL ± standard error."""
    if protocol not in PROTOCOLS:
        raise FootnoteError(f"unknown --protocol '{protocol}'; use hf or llama.cpp")
    settings = Settings()
    specs = model or [answer_model_spec(settings)]
    chosen: ProtocolName = "llama.cpp" if protocol == "llama.cpp" else "hf"
    options = ScoringOptions(chosen, context_length, stride, max_tokens)
    results: list[PerplexityResult] = []
    bar = _ScoringBar(enabled=not json_output)
    with ExitStack() as stack:
        path, name = stack.enter_context(_input_file(file, len(specs)))
        tokens_out = stack.enter_context(tokens.open("w", encoding="utf-8")) if tokens else None
        stack.enter_context(bar.bar)
        for spec in specs:
            results.append(_score_one(spec, path, name, options, settings, bar, tokens_out))
    if json_output:
        output.print_json({"file": name, "results": [r.to_dict() for r in results]})
    elif len(results) == 1:
        _print_one(results[0])
    else:
        _print_table(results)
