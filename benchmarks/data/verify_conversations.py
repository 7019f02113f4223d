"""Verify the two-turn conversations in conversations-docqa-dev.jsonl against the docqa-dev corpus.

Usage:
    python benchmarks/data/verify_conversations.py [CORPUS_DIR] [--data FILE] [-v]

CORPUS_DIR defaults to ../shared/data/docqa-dev/corpus relative to the repository root;
FILE defaults to conversations-docqa-dev.jsonl next to this script.

Checks, for every item:
  - schema: id, kind, source, first, first_answers, follow_up, answers and evidence are
    present and non-empty; kind is "self-contained" or "dependent"; 1-3 answers per turn;
    the follow-up is a different question from the first
  - the source file exists in the corpus
  - the evidence occurs in the source document's text, ignoring case and with every run of
    whitespace collapsed to one space; for PDFs and HTML, where line breaking differs, the
    comparison falls back to removing all whitespace
  - every entry of `answers` occurs in the evidence (case-insensitive)
  - every entry of `first_answers` occurs somewhere in the document (case- and
    whitespace-insensitive, as for the evidence)
For the whole set:
  - ids are unique
  - the kinds are balanced: as many "self-contained" as "dependent" items
  - at least 48 items over at least 20 documents, at most 3 items per document

Text extraction: .pdf with `pdftotext -enc UTF-8 FILE -` (poppler-utils); .html with
html.parser (text outside <head>/<script>/<style>, a line break at block-level tags);
.gz decompressed, then handled by the inner extension; anything else read as UTF-8.

The last line printed is "N ok, M failed", followed by the failing ids; set-level
problems are printed above it and counted in M. The exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "docqa-dev" / "corpus"
DEFAULT_DATA = HERE / "conversations-docqa-dev.jsonl"

KINDS = ("self-contained", "dependent")
TEXT_FIELDS = ("id", "kind", "source", "first", "follow_up", "evidence")
LIST_FIELDS = ("first_answers", "answers")
MIN_ITEMS = 48
MIN_DOCUMENTS = 20
MAX_PER_DOCUMENT = 3

BLOCK_TAGS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "caption",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "ul",
    "body",
    "html",
}
SKIP_TAGS = {"script", "style", "head"}


class _HTMLText(HTMLParser):
    """Collects the visible text of a page, breaking lines at block-level tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIP_TAGS:
            self.skip += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_TAGS:
            self.skip = max(0, self.skip - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def html_text(data: bytes) -> str:
    parser = _HTMLText()
    parser.feed(decode(data))
    parser.close()
    return "".join(parser.parts)


def pdf_text(data: bytes) -> str:
    result = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", "-", "-"],
        input=data,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return result.stdout.decode("utf-8", "replace")


def extract(name: str, data: bytes) -> str:
    """The text of a corpus file, chosen by its extension."""
    low = name.lower()
    if low.endswith(".gz"):
        return extract(name[:-3], gzip.decompress(data))
    if low.endswith(".pdf"):
        return pdf_text(data)
    if low.endswith((".html", ".htm")):
        return html_text(data)
    return decode(data)


def collapse(text: str) -> str:
    """Lower-cased text with every run of whitespace (NBSP included) as one space."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def squeeze(text: str) -> str:
    """Lower-cased text with all whitespace removed."""
    return re.sub(r"\s+", "", text).casefold()


class Document:
    """A corpus document's text, prepared for the two kinds of comparison."""

    def __init__(self, name: str, text: str) -> None:
        self.loose_layout = name.lower().endswith((".pdf", ".html", ".htm"))
        self.collapsed = collapse(text)
        self.squeezed = squeeze(text) if self.loose_layout else ""

    def contains(self, needle: str) -> bool:
        if collapse(needle) in self.collapsed:
            return True
        return self.loose_layout and squeeze(needle) in self.squeezed


def load_items(path: Path) -> list[dict[str, Any]]:
    items = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                item = json.loads(line)
                item.setdefault("id", f"<line {number}>")
                items.append(item)
    return items


def schema_problems(item: dict[str, Any]) -> list[str]:
    problems = []
    for field in TEXT_FIELDS:
        value = item.get(field)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{field} missing or empty")
    for field in LIST_FIELDS:
        value = item.get(field)
        if (
            not isinstance(value, list)
            or not 1 <= len(value) <= 3
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            problems.append(f"{field} must be a list of 1-3 non-empty strings")
    if item.get("kind") not in KINDS:
        problems.append(f"kind {item.get('kind')!r} is not one of {KINDS}")
    first, follow_up = item.get("first"), item.get("follow_up")
    if isinstance(first, str) and isinstance(follow_up, str) and collapse(first) == collapse(follow_up):
        problems.append("follow_up repeats the first question")
    return problems


def content_problems(item: dict[str, Any], document: Document) -> list[str]:
    problems = []
    evidence = item["evidence"]
    if not document.contains(evidence):
        problems.append("evidence not found in the document")
    for answer in item["answers"]:
        if collapse(answer) not in collapse(evidence):
            problems.append(f"answer {answer!r} not in the evidence")
    for answer in item["first_answers"]:
        if not document.contains(answer):
            problems.append(f"first answer {answer!r} not in the document")
    return problems


def item_problems(item: dict[str, Any], corpus: Path, documents: dict[str, Document]) -> list[str]:
    problems = schema_problems(item)
    if problems:
        return problems
    source = item["source"]
    path = corpus / source
    if not path.is_file():
        return [f"source {source!r} not found in {corpus}"]
    if source not in documents:
        documents[source] = Document(source, extract(source, path.read_bytes()))
    return content_problems(item, documents[source])


def set_problems(items: list[dict[str, Any]]) -> list[str]:
    problems = []
    ids = Counter(str(item.get("id")) for item in items)
    duplicates = sorted(i for i, n in ids.items() if n > 1)
    if duplicates:
        problems.append(f"duplicate ids: {', '.join(duplicates)}")
    kinds = Counter(item.get("kind") for item in items)
    if kinds["self-contained"] != kinds["dependent"]:
        problems.append(
            f"kinds unbalanced: {kinds['self-contained']} self-contained, {kinds['dependent']} dependent"
        )
    if len(items) < MIN_ITEMS:
        problems.append(f"only {len(items)} items (need at least {MIN_ITEMS})")
    sources = Counter(item.get("source") for item in items)
    if len(sources) < MIN_DOCUMENTS:
        problems.append(f"only {len(sources)} documents (need at least {MIN_DOCUMENTS})")
    crowded = sorted(str(s) for s, n in sources.items() if n > MAX_PER_DOCUMENT)
    if crowded:
        problems.append(f"more than {MAX_PER_DOCUMENT} items for: {', '.join(crowded)}")
    return problems


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpus",
        nargs="?",
        type=Path,
        default=DEFAULT_CORPUS,
        help=f"corpus folder (default: {DEFAULT_CORPUS})",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"conversations file (default: {DEFAULT_DATA.name} next to this script)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every item")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    items = load_items(args.data)
    documents: dict[str, Document] = {}
    failed: list[str] = []
    for item in items:
        problems = item_problems(item, args.corpus, documents)
        if problems:
            failed.append(str(item["id"]))
            print(f"FAIL {item['id']}: {'; '.join(problems)}")
        elif args.verbose:
            print(f"ok   {item['id']} [{item['kind']}] {item['source']}: {item['follow_up']}")
    overall = set_problems(items)
    for problem in overall:
        print(f"FAIL set: {problem}")
    kinds = Counter(item.get("kind") for item in items)
    print(
        f"kinds: {', '.join(f'{k} {kinds[k]}' for k in KINDS)}; "
        f"documents: {len({item.get('source') for item in items})}"
    )
    line = f"{len(items) - len(failed)} ok, {len(failed) + len(overall)} failed"
    if failed:
        line += f" ({', '.join(failed)})"
    print(line)
    return 1 if failed or overall else 0


if __name__ == "__main__":
    sys.exit(main())
