"""How the encoders a question runs through batch their texts: fixed batches against batches
limited by padded positions (`models.base.padded_batches`), in one run.

For each question of a document set (ingested once into `--home`), the sentences of its top-k
chunks are what the answer engine embeds (the citation checker's sentence vectors) and what the
sentence reader reads. Both are timed batch by batch through the same ONNX sessions:

- embedder: fixed batches of 32 (the baseline) against at most 32 rows and `--positions` padded
  tokens;
- reader: fixed batches of 16 (the baseline) against at most 32 rows and `--positions`.

Reported per encoder: mean seconds per question for each, their ratio, and the padding share
(padded positions that held no token). The machine's CPU flags are recorded with the figures.

    python benchmarks/batch_positions.py ../shared/data/docqa-dev --home /tmp/docqa-home
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reader_blend import save_result

from footnote.answer.evidence import reader_candidates
from footnote.answer.sentence_spans import sentence_spans
from footnote.application import create_app
from footnote.config import Settings
from footnote.evaluation.docqa import CORPUS_FOLDER, load_doc_questions
from footnote.models.base import BATCH_POSITIONS, padded_batches
from footnote.models.cpu import machine
from footnote.models.sentence_reader import NO_ANSWER_CANDIDATE, OnnxSentenceReader, bundled_reader_files

REPEATS = 3


def fixed_batches(lengths: Sequence[int], rows: int) -> list[list[int]]:
    """The baseline: sorted by length, `rows` at a time, however long."""
    return padded_batches(lengths, rows, positions=rows * max(lengths, default=1))


def timed(
    lengths: list[list[int]],
    batches: Callable[[Sequence[int]], list[list[int]]],
    run: Callable[[int, list[int]], Any],
) -> dict[str, float]:
    """Mean seconds per question of running every question's batches, best of `REPEATS`, and
    the padding share of those batches."""
    padded = real = 0
    for question_lengths in lengths:
        for batch in batches(question_lengths):
            padded += len(batch) * max(question_lengths[i] for i in batch)
            real += sum(question_lengths[i] for i in batch)
    best = float("inf")
    for _ in range(REPEATS):
        began = time.perf_counter()
        for question, question_lengths in enumerate(lengths):
            for batch in batches(question_lengths):
                run(question, batch)
        best = min(best, time.perf_counter() - began)
    return {
        "seconds_per_question": round(best / len(lengths), 4),
        "padding_share": round(1 - real / padded, 3),
    }


def compared(baseline: dict[str, float], limited: dict[str, float]) -> dict[str, object]:
    ratio = limited["seconds_per_question"] / baseline["seconds_per_question"]
    return {"fixed": baseline, "position_limited": limited, "ratio": round(ratio, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=40, help="questions to time (0: all)")
    parser.add_argument("--positions", type=int, default=BATCH_POSITIONS)
    args = parser.parse_args()

    app = create_app(Settings(home=args.home))
    if not app.catalog.chunk_id_list():
        app.ingest([args.dataset / CORPUS_FOLDER])
    items = load_doc_questions(args.dataset)
    items = items[: args.limit] if args.limit else items
    embedder: Any = app.embedder
    reader = OnnxSentenceReader(bundled_reader_files())
    sentences, pairs = [], []
    for item in items:
        hits = app.search(item.question, limit=args.top_k)
        spans = sentence_spans(hits)
        texts = [hits[s.source].text[s.start : s.end] for s in spans]
        sentences.append(embedder._tokenizer.encode_batch(texts))
        candidates = [*reader_candidates(hits, spans, texts), NO_ANSWER_CANDIDATE]
        pairs.append((item.question, candidates))
    session = embedder._batch_session or embedder._query_session

    def embed(question: int, batch: list[int]) -> None:
        embedder._run(session, [sentences[question][i] for i in batch])

    def read(question: int, batch: list[int]) -> None:
        text, candidates = pairs[question]
        reader.read_batch(text, [candidates[i] for i in batch])

    sentence_lengths = [[len(e.ids) for e in encodings] for encodings in sentences]
    pair_lengths = [reader.lengths(text, candidates) for text, candidates in pairs]
    embed(0, list(range(len(sentence_lengths[0]))))  # loads the sessions before timing
    read(0, list(range(len(pair_lengths[0]))))
    report = {
        "dataset": str(args.dataset),
        "questions": len(items),
        "positions": args.positions,
        "sentences_per_question": round(sum(map(len, sentence_lengths)) / len(items), 1),
        "embedder": embedder.name,
        "checker_sentences": compared(
            timed(sentence_lengths, lambda lengths: fixed_batches(lengths, 32), embed),
            timed(sentence_lengths, lambda lengths: padded_batches(lengths, 32, args.positions), embed),
        ),
        "reader": compared(
            timed(pair_lengths, lambda lengths: fixed_batches(lengths, 16), read),
            timed(pair_lengths, lambda lengths: padded_batches(lengths, 32, args.positions), read),
        ),
        "machine": machine(),
    }
    print(json.dumps(report, indent=2))
    save_result(name="batch_positions", tag=args.dataset.name, report=report)


if __name__ == "__main__":
    main()
