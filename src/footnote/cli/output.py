"""How results look in a terminal, and as JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from footnote.answer.citations import AnswerSentence, Citation
from footnote.answer.render import MarkdownRenderer
from footnote.answer.result import Answer
from footnote.core.hits import SearchHit
from footnote.store.records import DocumentRecord

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def print_error(message: str) -> None:
    # One line however long: a terminal may wrap it, but a log or a script reads it whole.
    errors.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)


class SentencePrinter:
    """Prints checked sentences as they arrive, then what they left out of the finished answer."""

    def __init__(self) -> None:
        self._renderer = MarkdownRenderer()

    def print(self, sentence: AnswerSentence) -> None:
        console.print(escape(self._renderer.add(sentence)), end="", soft_wrap=True)

    def finish(self, answer: Answer) -> None:
        """The rest of the answer's text: all of it when no sentence was printed (a declined or
        withheld answer)."""
        rest = self._renderer.rest(answer.text)
        if rest:
            console.print(rest, end="")


def print_sources(answer: Answer) -> None:
    """The numbered sources, each with every quote its footnotes point at, in order (none for a
    withheld answer, whose sentences are not shown: what is printed is what footnote decided),
    then, dimmed, how many sentences were left out because no source supports them."""
    cited: dict[int, dict[tuple[int, int], Citation]] = {}
    for c in answer.shown_citations:
        cited.setdefault(c.number, {}).setdefault((c.start, c.end), c)
    if not answer.sources:
        return
    console.print("\n[bold]Sources[/]")
    for number, hit in enumerate(answer.sources, start=1):
        quotes = sorted(cited.get(number, {}).values(), key=lambda c: c.start)
        marker = "[bold cyan]" if quotes else "[dim]"
        console.print(f"{marker}[{number}][/] {escape(hit.location)}", soft_wrap=True)
        for citation in quotes:
            page = f" (p. {citation.page})" if citation.page is not None else ""
            console.print(
                f'    [green]"{escape(citation.quote)}"[/]{page} '
                f"[dim]chars {citation.start}-{citation.end}[/]",
                soft_wrap=True,
            )
    left_out = len(answer.unsupported_sentences)
    if left_out:
        console.print(f"[dim]{left_out} sentence(s) left out: no source supports them.[/]")


def print_related(answer: Answer) -> None:
    if answer.related_questions:
        console.print("\n[bold]Related questions[/]")
        for question in answer.related_questions:
            console.print(f"- {escape(question)}", soft_wrap=True)


def print_hits(hits: list[SearchHit]) -> None:
    if not hits:
        console.print("[dim]no results[/]")
    for rank, hit in enumerate(hits, start=1):
        console.print(f"[bold]{rank}.[/] {escape(hit.title)} [dim]{escape(hit.location)}[/]")
        snippet = " ".join(hit.text.split())
        console.print(f"   {escape(snippet[:240])}{'…' if len(snippet) > 240 else ''}")
        found_by = []
        if hit.keyword_rank is not None:
            found_by.append(f"keyword #{hit.keyword_rank}")
        if hit.dense_rank is not None:
            found_by.append(f"dense #{hit.dense_rank}")
        console.print(f"   [dim]score {hit.score:.4f} ({', '.join(found_by)})[/]")


def explanation(hit: SearchHit) -> dict[str, Any]:
    """How a hit was found: each retriever's 1-based rank and score (None when absent), the fused score."""
    return {
        "keyword": {"rank": hit.keyword_rank, "score": hit.keyword_score},
        "dense": {"rank": hit.dense_rank, "score": hit.dense_score},
        "fused": hit.score,
        "rerank": hit.rerank_score,
    }


def print_explained_hits(hits: list[SearchHit]) -> None:
    """A table of ranks and scores per retriever; keyword scores are BM25 (higher is better)."""
    if not hits:
        console.print("[dim]no results[/]")
        return
    reranked = any(hit.rerank_score is not None for hit in hits)
    columns = ["#", "keyword rank", "keyword score", "dense rank", "dense score", "fused"]
    table = Table(*columns, *(["rerank"] if reranked else []), "location", title="How each result was found")

    def cell(value: float | int | None, digits: int = 4) -> str:
        if value is None:
            return "-"
        return str(value) if isinstance(value, int) else f"{value:.{digits}f}"

    for rank, hit in enumerate(hits, start=1):
        row = [
            str(rank),
            cell(hit.keyword_rank),
            cell(hit.keyword_score),
            cell(hit.dense_rank),
            cell(hit.dense_score),
            cell(hit.score),
        ]
        if reranked:
            row.append(cell(hit.rerank_score))
        table.add_row(*row, escape(hit.location))
    console.print(table)


def print_documents(documents: list[DocumentRecord]) -> None:
    table = Table("id", "title", "format", "chunks", "collection", "path")
    for doc in documents:
        table.add_row(
            str(doc.id),
            escape(doc.title),
            doc.format,
            str(doc.chunk_count),
            escape(doc.collection),
            escape(doc.path),
        )
    console.print(table)
