"""The section model's examples: broad-dev's broad questions read by the engine as it answers
them (`footnote.training.sections` fits the model to them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from footnote.answer.answering import Answering
from footnote.answer.sections import read_chunks
from footnote.application.app import Application
from footnote.errors import ConfigError
from footnote.evaluation.docqa import DocQuestion, key_points_in, load_doc_questions
from footnote.training.sections import SectionExample
from footnote.training.shape import BROAD_KINDS


def broad_questions(data: Path) -> list[DocQuestion]:
    """broad-dev's summaries, how-tos, lists and comparisons (`data`: the shared data folder)."""
    questions = data / "broad-dev" / "questions.jsonl"
    if not questions.is_file():
        raise ConfigError(f"{data} holds no broad-dev/questions.jsonl; pass --data the shared data folder")
    items = load_doc_questions(data / "docqa-dev", questions=questions)
    return [item for item in items if item.kind in BROAD_KINDS]


def section_examples(
    app: Application, items: Sequence[DocQuestion], progress: Callable[[int], None] | None = None
) -> list[SectionExample]:
    """Each of `items` retrieved, read and its chunks read whole as a broad answer reads them, on
    `app`'s index (which holds their documents)."""
    engine = app.answer_engine()
    reader, shape = engine.support.reader, engine.shape
    if reader is None or shape is None:
        raise ConfigError("the section model needs the sentence reader and the shape model's embedder on")
    answering = Answering(engine)
    retrieval = replace(engine.policy.retrieval, limit=engine.policy.broad_sources)
    examples = []
    for done, item in enumerate(items, 1):
        hits = engine.retriever.search(item.question, retrieval)
        checker = engine.support.checker(hits, item.question, engine.policy.judge_threshold)
        _, _, scored = answering.reading.evidence(item.question, checker, item.question, prose=True)
        examples.append(
            SectionExample(
                group=item.sources[0] if item.sources else item.id,
                kind=item.kind,
                hits=hits,
                scored=scored,
                readings=read_chunks(item.question, hits, reader, shape.embedder),
                labels=[int(bool(key_points_in(item, [hit.text]))) for hit in hits],
                complete=_completeness(item),
            )
        )
        if progress is not None:
            progress(done)
    return examples


def _completeness(item: DocQuestion) -> Callable[[Sequence[str]], bool]:
    def complete(quotes: Sequence[str]) -> bool:
        return len(key_points_in(item, quotes)) >= item.min_points

    return complete
