"""Training examples for the sentence reader from a question set with known answers.

A set in `footnote eval answers`' layout (a `corpus/` folder and `questions.jsonl`, such as
../shared/data/docqa-dev: real questions about real technical documents) is ingested into a
scratch home as a user would ingest it, each question is searched as the answer engine searches
it, and every sentence of the retrieved chunks becomes a candidate, labelled 1 when it holds one
of the question's accepted answers, as `footnote eval answers` judges a quote. A question the
documents cannot answer keeps every candidate at 0. Each example's group is its document (for
an unanswerable question, that of the first hit), so `footnote train reader --held-out DOCUMENT`
keeps whole documents out of training, for figures cross-validated by document.

    python scripts/reader_set_examples.py ../shared/data/docqa-dev --out /tmp/docqa-examples.jsonl
    python scripts/reader_set_examples.py ../shared/data/docqa-dev \
        --questions ../shared/data/broad-dev/questions.jsonl --kind summary --kind howto \
        --kind list --kind compare --out /tmp/broad-examples.jsonl
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from footnote.answer import evidence
from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.evaluation.docqa import (
    CORPUS_FOLDER,
    DocQuestion,
    contains_answer,
    key_points_in,
    load_doc_questions,
    spread_by_source,
)
from footnote.training.reader_data import (
    ReaderExample,
    kept_candidates,
    open_examples,
    retrieved_candidates,
    write_example,
)


def set_example(app: Application, item: DocQuestion, top_k: int, most: int) -> ReaderExample | None:
    """The question's candidates as the engine retrieves them, labelled by the accepted answers
    or the key points: at most `most`, the answering sentences and then those the blend ranks best."""
    question = item.question
    hits = app.search(question, limit=top_k)
    if not hits:
        return None
    spans, texts, inputs = retrieved_candidates(hits, question)
    labels = [int(_answers(item, text)) for text in texts]
    scores = evidence.score_sentences(question, spans, None, texts)
    order = kept_candidates([bool(x) for x in labels], scores, most)
    group = item.source or (item.sources[0] if item.sources else Path(hits[0].path).name)
    return ReaderExample(question, tuple(inputs[i] for i in order), tuple(labels[i] for i in order), group)


def _answers(item: DocQuestion, text: str) -> bool:
    """Whether `text` holds an accepted answer of `item` or one of its key points."""
    if item.key_points:
        return bool(key_points_in(item, [text]))
    return bool(item.answers) and contains_answer(text, item.answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--questions", type=Path, help="another questions file about the same corpus")
    parser.add_argument("--kind", action="append", help="only questions of this kind (repeatable)")
    parser.add_argument(
        "--home", type=Path, help="an index of the set's corpus to reuse (default: a scratch one)"
    )
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=16, help="most candidates kept per question")
    parser.add_argument("--per-group", type=int, default=0, help="at most this many questions per document")
    args = parser.parse_args()
    items = load_doc_questions(args.dataset, questions=args.questions)
    if args.kind:
        items = [item for item in items if item.kind in args.kind]
    if args.per_group:
        items = spread_by_source(items, args.per_group)
    with tempfile.TemporaryDirectory(prefix="footnote-set-examples-") as scratch:
        app = create_app(Settings(home=args.home or Path(scratch) / "home", sentence_reader="off"))
        if not app.catalog.chunk_id_list():
            app.ingest([args.dataset / CORPUS_FOLDER])
        about = {
            "set": args.dataset.name,
            "questions_file": str(args.questions or args.dataset / "questions.jsonl"),
            "kinds": args.kind or "all",
            "questions": len(items),
            "top_k": args.top_k,
            "candidates": args.candidates,
        }
        kept = skipped = 0
        with open_examples(args.out, about) as out:
            for item in items:
                example = set_example(app, item, args.top_k, args.candidates)
                if example is None or (item.answerable and not any(example.labels)):
                    skipped += 1  # nothing retrieved holds the answer: no lesson in ranking
                    continue
                write_example(out, example)
                kept += 1
        app.close()
    print(f"saved {kept} questions to {args.out} ({skipped} whose answer was not retrieved left out)")


if __name__ == "__main__":
    main()
