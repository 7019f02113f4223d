"""`footnote bench`: measure a running server, ingest against a plain encode, perplexity scoring
against transformers and a plain llama-cpp-python loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from footnote.cli import output
from footnote.cli.options import JsonReportOption
from footnote.errors import ConfigError

if TYPE_CHECKING:
    from footnote.bench.load import StepResult

bench_app = typer.Typer(
    help="Measure a running footnote server (under load, or on a busy machine), ingest against a plain "
    "encode, or perplexity scoring.",
    no_args_is_help=True,
)


def _rates(text: str) -> list[float]:
    try:
        rates = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--rates {text!r}: expected numbers separated by commas, e.g. 0.5,1,2") from None
    if not rates or any(rate <= 0 for rate in rates):
        raise ConfigError(f"--rates {text!r}: every rate must be above 0 requests per second")
    return rates


def _mix(text: str | None) -> tuple[tuple[str, float], ...]:
    """`interactive:1,batch:1` as (class, share) pairs; a class without a share has share 1."""
    if not text:
        return ()
    pairs = []
    for part in (part.strip() for part in text.split(",") if part.strip()):
        name, _, share = part.partition(":")
        if name not in ("interactive", "api", "batch"):
            raise ConfigError(f"--mix {text!r}: {name!r} is not a request class (interactive, api, batch)")
        try:
            weight = float(share) if share else 1.0
        except ValueError:
            raise ConfigError(f"--mix {text!r}: the share after {name}: must be a number") from None
        if weight <= 0:
            raise ConfigError(f"--mix {text!r}: every share must be above 0")
        pairs.append((name, weight))
    return tuple(pairs)


def _check_reachable(url: str) -> None:
    import httpx

    try:
        httpx.get(f"{url}/healthz", timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        raise ConfigError(f"cannot reach {url}/healthz ({exc}); is `footnote serve` running there?") from None


@bench_app.command("load")
def load(
    url: Annotated[str, typer.Option(help="The server, e.g. http://127.0.0.1:8080.")],
    queries: Annotated[Path, typer.Option(help="Questions: a BEIR queries.jsonl or one per line.")],
    rates: Annotated[str, typer.Option(help="Offered requests per second, one per step.")] = "1,2,5,10,20",
    step_seconds: Annotated[float, typer.Option(min=1, help="How long each step sends requests.")] = 30,
    max_tokens: Annotated[int, typer.Option(min=1, help="max_tokens of every request.")] = 64,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds a request may take.")] = 120,
    limit_queries: Annotated[int | None, typer.Option(min=1, help="Use the first N questions.")] = None,
    robust: Annotated[bool, typer.Option(help="Add typo, swap, drop and mask variants.")] = True,
    api_key: Annotated[str | None, typer.Option(envvar="FOOTNOTE_BENCH_API_KEY", help="Bearer key.")] = None,
    pid: Annotated[int | None, typer.Option(help="Server process id, for its RSS (else /metrics).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for the JSON report and the chart.")] = Path(
        "benchmarks/results"
    ),
    label: Annotated[str, typer.Option(help="File name stem of the report.")] = "load",
    seed: Annotated[int, typer.Option(help="Seed of arrivals, question order and variants.")] = 0,
    mix: Annotated[
        str | None,
        typer.Option(
            help="Request classes sent as X-Footnote-Class, with their shares: interactive:1,batch:1 "
            "(default: no class, which the server treats as api)."
        ),
    ] = None,
    json_output: JsonReportOption = False,
) -> None:
    """Open-loop arrivals at a ladder of rates: QPS, time to first token, time to first checked
    sentence and latency percentiles, 429s with their Retry-After, the server's RSS, and each
    request class apart when a mix is offered."""
    import json

    from footnote.bench.load import LoadTarget
    from footnote.bench.memory import rss_reader
    from footnote.bench.queries import BenchQuery, load_queries, robustness_set
    from footnote.bench.runner import LoadPlan, run_ladder, write_report

    texts = load_queries(queries, limit_queries)
    bench_queries = robustness_set(texts, seed) if robust else [BenchQuery(t, "original") for t in texts]
    target = LoadTarget(url.rstrip("/"), api_key, max_tokens, timeout, _mix(mix))
    plan = LoadPlan(_rates(rates), step_seconds, seed, label)
    _check_reachable(target.url)

    rss = rss_reader(target.url, pid, api_key)
    steps = run_ladder(target, bench_queries, plan, rss, None if json_output else _show_step)
    json_path, chart = write_report(steps, target, plan, bench_queries, out)
    if json_output:
        output.print_json(json.loads(json_path.read_text(encoding="utf-8")))
    else:
        output.console.print(f"wrote {json_path} and {chart}")


def _show_step(step: StepResult) -> None:
    """One step of the load ladder, for a person."""
    first_token, first_sentence, e2e = step.first_token_s, step.first_sentence_s, step.latency_s
    rss = "unknown" if step.rss_bytes is None else f"{step.rss_bytes / 2**20:.0f} MiB"
    peak = "unknown" if step.rss_peak_bytes is None else f"{step.rss_peak_bytes / 2**20:.0f} MiB"
    output.console.print(
        f"offered {step.offered_qps:g}/s: sent {step.sent}, ok {step.ok}, 429 {step.rejected} "
        f"(Retry-After p50 {step.retry_after_s.get('p50')} s, missing {step.missing_retry_after}), "
        f"errors {step.errors + step.timeouts}, achieved {step.achieved_qps:g}/s, "
        f"first token p50/p99 {first_token['p50']}/{first_token['p99']} s "
        f"(missing {step.missing_first_token}), "
        f"first checked sentence p50/p99 {first_sentence['p50']}/{first_sentence['p99']} s "
        f"(missing {step.missing_first_sentence}), e2e p50/p99 {e2e['p50']}/{e2e['p99']} s, "
        f"server RSS {rss} (peak {peak})"
    )
    for name, figures in step.by_class.items():
        latency = figures["latency_s"]
        output.console.print(
            f"  {name}: sent {figures['sent']}, ok {figures['ok']}, 429 {figures['rejected']}, "
            f"errors {figures['errors']}, e2e p50/p99 {latency['p50']}/{latency['p99']} s"
        )


@bench_app.command("serve")
def serve(
    url: Annotated[str, typer.Option(help="The server, e.g. http://127.0.0.1:8080.")],
    queries: Annotated[Path, typer.Option(help="Questions: a BEIR queries.jsonl or one per line.")],
    busy: Annotated[
        int, typer.Option(min=0, help="Busy loops run beside the server on this machine (0: none).")
    ] = 1,
    upload: Annotated[
        Path | None, typer.Option(help="A folder whose files are uploaded while questions are asked.")
    ] = None,
    limit_queries: Annotated[int, typer.Option(min=1, help="Use the first N questions.")] = 20,
    max_tokens: Annotated[int, typer.Option(min=1, help="max_tokens of every request.")] = 64,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds a request may take.")] = 120,
    api_key: Annotated[str | None, typer.Option(envvar="FOOTNOTE_BENCH_API_KEY", help="Bearer key.")] = None,
    out: Annotated[Path, typer.Option(help="Folder for the JSON report.")] = Path("benchmarks/results"),
    label: Annotated[str, typer.Option(help="File name stem of the report.")] = "serve",
    json_output: JsonReportOption = False,
) -> None:
    """Answer latency on a busy machine: the questions asked one at a time, quiet, then with
    --busy loops running beside the server, then while --upload's files are uploaded to it; p50,
    p90 and their ratios to the quiet pass, with the CPU and its load."""
    import json
    from datetime import UTC, datetime

    from footnote.bench.busy import measure
    from footnote.bench.load import LoadTarget
    from footnote.bench.queries import load_queries
    from footnote.models.cpu import machine

    if upload is not None and not upload.is_dir():
        raise ConfigError(f"--upload {upload}: not a folder; give a folder of documents to upload")
    target = LoadTarget(url.rstrip("/"), api_key, max_tokens, timeout)
    _check_reachable(target.url)
    result = measure(target, load_queries(queries, limit_queries), busy, upload)
    result.update(url=target.url, when=datetime.now(UTC).isoformat(timespec="seconds"), machine=machine())
    report = out / f"{label}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if json_output:
        output.print_json(result)
        return
    for name in ("quiet", "busy", "uploading"):
        if name in result:
            row = result[name]
            ratios = f", ratio p50 {row['ratio_p50']} p90 {row['ratio_p90']}" if name != "quiet" else ""
            output.console.print(
                f"{name}: p50 {row['p50']} s, p90 {row['p90']} s, failed {row['failed']}{ratios}"
            )
    output.console.print(f"wrote {report}")


@bench_app.command("ingest")
def ingest(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders to ingest, as `footnote ingest` takes.")
    ],
    out: Annotated[Path, typer.Option(help="Folder for the JSON report.")] = Path("benchmarks/results"),
    label: Annotated[str, typer.Option(help="File name stem of the report.")] = "ingest",
    against: Annotated[
        list[Path] | None,
        typer.Option(
            help="Also ingest these files (repeat for several) in the same run and compare documents "
            "per second: Chinese documents against English ones, say."
        ),
    ] = None,
    json_output: JsonReportOption = False,
) -> None:
    """Time `footnote ingest` of your files (into a scratch data directory) against a plain
    sentence-transformers encode of the same texts in the same run: seconds, tokens embedded,
    padding and the ratio; with `--against`, documents per second against those files'."""
    from datetime import UTC, datetime

    from footnote.bench.ingest import compare_folder, write_ingest_chart
    from footnote.config import Settings

    result = compare_folder(paths, Settings(), against or ())
    result["when"] = datetime.now(UTC).isoformat(timespec="seconds")
    report = out / f"{label}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.json"
    _save_and_show(
        result, report, lambda stem: write_ingest_chart(result, stem), json_output, _print_ingest_table
    )


def _save_and_show(
    result: dict[str, Any],
    path: Path,
    draw: Callable[[Path], Path],
    json_output: bool,
    show: Callable[[dict[str, Any]], None],
) -> None:
    """Save `result` as JSON at `path` with its chart (drawn by `draw`) beside it, naming the chart
    in it, then print it: the JSON with `--json`, else `show`'s table and the files written."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    chart = draw(path.with_suffix(""))
    result["chart"] = chart.name
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if json_output:
        output.print_json(result)
        return
    show(result)
    output.console.print(f"wrote {path} and {chart}")


def _print_ingest_table(result: dict[str, object]) -> None:
    from rich.table import Table

    table = Table(title=f"{result['documents']} documents")
    for column in ("", "seconds", "tokens embedded", "documents truncated"):
        table.add_column(column, justify="left" if not column else "right")
    table.add_row(
        "plain encode",
        str(result["plain_encode_seconds"]),
        str(result["plain_encode_tokens"]),
        str(result["documents_truncated_by_plain_encode"]),
    )
    table.add_row(
        "footnote ingest",
        str(result["footnote_ingest_seconds"]),
        str(result["footnote_tokens_embedded"]),
        str(result["footnote_chunks_over_window"]),
    )
    output.console.print(table)
    output.console.print(
        f"ratio {result['ratio']}; embedding {result['footnote_embedding_seconds']} s, "
        f"beyond it {result['pipeline_seconds_beyond_embedding']} s; padding share "
        f"{result['footnote_padding_share']}; chunker counting {result['footnote_chunk_counting_seconds']} s"
    )
    output.console.print(
        f"footnote ingest: {result['footnote_documents_per_second']} documents/s, "
        f"{result['footnote_chunks_per_second']} chunks/s "
        f"({result['footnote_language_index_chunks']} also embedded by the language embedder)"
    )
    other = result.get("against")
    if isinstance(other, dict):
        output.console.print(
            f"against {', '.join(other['paths'])}: {other['footnote_documents_per_second']} documents/s, "
            f"{other['footnote_chunks_per_second']} chunks/s; documents per second "
            f"{result['documents_per_second_vs_against']}x theirs"
        )


@bench_app.command("ppl")
def ppl(
    text: Annotated[Path, typer.Argument(help="UTF-8 text file to score.", exists=True, dir_okay=False)],
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Registered name or GGUF path (default: FOOTNOTE_LLM)."),
    ] = None,
    context: Annotated[int, typer.Option("--context", "-c", min=2, help="Window size in tokens.")] = 512,
    stride: Annotated[
        int | None, typer.Option(min=1, help="Tokens between window starts (default: no overlap).")
    ] = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=2, help="Score the first N tokens of the text.")
    ] = 4096,
    threads: Annotated[int, typer.Option(min=0, help="CPU threads of every contender (0: every core).")] = 0,
    skip: Annotated[
        list[str] | None,
        typer.Option(
            help="Leave out a contender (repeatable): footnote, footnote-f32, footnote-q8_0, "
            "llama-cpp-python, transformers."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="The JSON report (default benchmarks/results/ppl-STAMP.json); the chart goes beside it."
        ),
    ] = None,
    json_output: JsonReportOption = False,
) -> None:
    """Perplexity of your text with footnote's scorer against transformers fp32 and a plain
    llama-cpp-python loop (logits_all) in the same run: same tokens, same windows; PPL, tokens/s
    and the ratios, a JSON report and a chart."""

    from footnote.bench.ppl import PplPlan, compare, default_out
    from footnote.bench.ppl_chart import write_ppl_chart
    from footnote.config import Settings

    settings = Settings()
    plan = PplPlan(text, model or settings.llm, context, stride, max_tokens, threads, frozenset(skip or ()))

    def show(done: int, total: int) -> None:
        output.errors.print(f"window group {done}/{total}", highlight=False)

    report = compare(plan, settings, None if json_output else show)
    title = f"footnote bench ppl: {text.name}, {plan.model}"
    draw = lambda stem: write_ppl_chart(report, stem, title)  # noqa: E731 - one expression, named for reading
    _save_and_show(report, out or default_out(), draw, json_output, _print_ppl_table)


def _print_ppl_table(report: dict[str, object]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from footnote.bench.ppl import describe, table

    header, rows = table(report)
    grid = Table(title=escape(describe(report)))
    for index, column in enumerate(header):
        grid.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        grid.add_row(*(escape(cell) for cell in row))
    output.console.print(grid)
    if report.get("same_tokens") is False:
        output.console.print(
            "[yellow]the transformers tokenizer splits this text differently; all scored footnote's ids[/]"
        )
