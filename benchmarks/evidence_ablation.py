"""Which terms of the evidence blend still earn their place beside the sentence reader: passage@1
of the engine's scores (the blend plus the reader) with each term taken out in turn.

For a document question set (ingested once into `--home`), every answerable question's top-k
chunks are split into sentences as the answer engine splits them, the bundled reader reads them
once, and the blend (`evidence.score_sentences`) is scored again with one term switched off at a
time: the typed-answer bonus, agreement between sources,
the lead-in context, embedding similarity, chunk rank and keyword coverage. Nothing is fitted, so
the figures hold for any split of the documents; a term whose removal costs nothing on every set
is a candidate for deletion.

    python benchmarks/evidence_ablation.py ../shared/data/docqa-dev --home /tmp/docqa-home
    python benchmarks/evidence_ablation.py ../shared/data/squad2-dev --home /tmp/squad-home --per-group 20

`--together NAME` (repeatable) also takes the named terms out at once, as a deletion would.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reader_blend import readers_for, save_result

from footnote.answer import evidence, sentence_spans
from footnote.answer.citations import CitationChecker
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.core.vectors import Vector
from footnote.evaluation.docqa import CORPUS_FOLDER, DocQuestion, contains_answer, load_doc_questions
from footnote.models.cpu import machine
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE

# Each term, and the value that switches it off.
TERMS_OFF = (
    ("TYPED_BONUS", 0.0),
    ("AGREEMENT_WEIGHT", 0.0),
    ("CONTEXT_DISCOUNT", 0.0),
    ("DENSE_WEIGHT", 0.0),
    ("RANK_WEIGHT", 0.0),
    ("KEYWORD_WEIGHT", 0.0),
)


def sampled(items: list[DocQuestion], per_group: int) -> list[DocQuestion]:
    """At most `per_group` questions per document, drawn with a fixed seed."""
    if not per_group:
        return items
    rng, kept, seen = random.Random(3), [], {}
    for item in rng.sample(items, len(items)):
        if seen.get(item.source, 0) < per_group:
            kept.append(item)
            seen[item.source] = seen.get(item.source, 0) + 1
    return sorted(kept, key=lambda i: i.id)


@dataclass(frozen=True)
class ReadQuestion:
    """One question's sources as the engine reads them: split into sentences, read by the reader."""

    item: DocQuestion
    hits: list[SearchHit]
    spans: list[sentence_spans.SentenceSpan]
    texts: list[str]
    question_vector: Vector | None  # None when read without the sentences' vectors
    logits: list[float]  # the reader's, one per sentence


def set_arguments(
    description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """The command line of a benchmark over one document question set (with `extra`'s options)."""
    parser = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(parser)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--per-group", type=int, default=0, help="at most this many questions per document")
    parser.add_argument("--reader", help="reader folder (default: the bundled one)")
    parser.add_argument(
        "--reader-for", action="append", help="GROUP=FOLDER: read this document with another reader"
    )
    return parser.parse_args()


def read_set(args: argparse.Namespace, vectors: bool) -> tuple[list[ReadQuestion], Callable[[str], int]]:
    """Every question of the set (ingested into `--home` if empty) with a source sentence, read
    once by the bundled reader, `--reader`, or the `--reader-for` its document (with the
    sentences' vectors when `vectors`), and the answer model's token counter, which sizes
    passages."""
    app = create_app(Settings(home=args.home))
    if not app.catalog.chunk_id_list():
        app.ingest([args.dataset / CORPUS_FOLDER])
    reader_of = readers_for(args)
    read = []
    for item in sampled(load_doc_questions(args.dataset), args.per_group):
        hits = app.search(item.question, limit=args.top_k)
        checker = CitationChecker(hits, app.embedder, question=item.question)
        spans = checker.sentence_spans(vectors)
        if not spans:
            continue
        texts = [hits[s.source].text[s.start : s.end] for s in spans]
        candidates = [*evidence.reader_candidates(hits, spans, texts), NO_ANSWER_CANDIDATE]
        group = item.source or Path(hits[0].path).name
        logits = reader_of(group).read(item.question, candidates).scores[:-1]
        vector = checker.question_vector if vectors else None
        read.append(ReadQuestion(item, hits, spans, texts, vector, logits))
    return read, app.generator.count_tokens


def main() -> None:
    def together(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--together", action="append", default=[], choices=[n for n, _ in TERMS_OFF])

    args = set_arguments(__doc__.splitlines()[0], together)
    read, count = read_set(args, vectors=True)
    read_once = [r for r in read if r.item.answerable]

    def passage_at_1() -> float:
        found = 0
        for r in read_once:
            blend = evidence.score_sentences(r.item.question, r.spans, r.question_vector, r.texts)
            scores = evidence.with_reader(blend, r.logits)
            passages = evidence.select_passages(r.hits, r.spans, scores, count)
            found += bool(passages) and contains_answer(passages[0].text(r.hits), r.item.answers)
        return round(found / len(read_once), 4)

    def without(*names: str) -> float:
        kept = {name: getattr(evidence, name) for name in names}
        for name in names:
            setattr(evidence, name, dict(TERMS_OFF)[name])
        try:
            return passage_at_1()
        finally:
            for name, value in kept.items():
                setattr(evidence, name, value)

    everything = passage_at_1()
    at_once = {"+".join(args.together): without(*args.together)} if args.together else {}
    report = {
        "dataset": str(args.dataset),
        "answerable_questions": len(read_once),
        "per_group": args.per_group or "all",
        "passage_at_1": {
            "every_term": everything,
            **{f"{n}={v}": without(n) for n, v in TERMS_OFF},
            **at_once,
        },
        "machine": machine(),
    }
    print(json.dumps({k: v for k, v in report.items() if k != "machine"}, indent=2))
    save_result("evidence_ablation", args.dataset.name, report)


if __name__ == "__main__":
    main()
