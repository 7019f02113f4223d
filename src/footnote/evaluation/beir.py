"""Reading a BEIR-format folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from footnote.evaluation.datasets import DatasetError, read_jsonl


@dataclass(frozen=True)
class CorpusRecord:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus_path: Path
    queries: dict[str, str]  # query id -> text, judged queries only, in file order
    qrels: dict[str, dict[str, int]]  # query id -> document id -> grade

    def corpus(self) -> Iterator[CorpusRecord]:
        for number, record in enumerate(_jsonl(self.corpus_path), start=1):
            try:
                yield CorpusRecord(str(record["_id"]), str(record.get("title") or ""), str(record["text"]))
            except KeyError as exc:
                raise DatasetError(
                    f"{self.corpus_path} line {number} has no {exc} field; BEIR corpus records need "
                    "_id and text"
                ) from exc


def load_beir(folder: Path, split: str = "test", limit_queries: int | None = None) -> BeirDataset:
    """The judged queries of `split` (the first `limit_queries` of them when given)."""
    corpus = _required(folder / "corpus.jsonl")
    qrels = _read_qrels(_required(folder / "qrels" / f"{split}.tsv"))
    queries: dict[str, str] = {}
    for record in _jsonl(_required(folder / "queries.jsonl")):
        query_id = str(record.get("_id", ""))
        if query_id in qrels:
            queries[query_id] = str(record.get("text", ""))
    if limit_queries is not None:
        queries = dict(list(queries.items())[:limit_queries])
    missing = set(qrels) - set(queries)
    if limit_queries is None and missing:
        raise DatasetError(
            f"{folder}/queries.jsonl lacks {len(missing)} judged queries (e.g. {sorted(missing)[0]}); "
            "is it the same dataset as the qrels?"
        )
    return BeirDataset(folder.name, corpus, queries, {q: qrels[q] for q in queries})


def _required(path: Path) -> Path:
    if not path.is_file():
        raise DatasetError(f"{path} is missing; a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/")
    return path


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    for _, record in read_jsonl(path):
        yield record


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as rows:
        for number, row in enumerate(csv.reader(rows, delimiter="\t"), start=1):
            if not row or (number == 1 and not row[-1].lstrip("-").isdigit()):
                continue  # blank line or the header
            if len(row) != 3:
                raise DatasetError(f"{path} line {number}: expected query-id, corpus-id, score")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels
