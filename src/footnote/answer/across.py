"""Reading across languages: a question in a language the sentence reader does not read (a
Chinese question over English manuals) is read beside each source sentence by a multilingual
embedder (multilingual-e5-small), which places a question and its answer close together whatever
their languages. Its similarity stands in for the reader's: it joins the choice of the evidence,
and the best of it decides whether the sources answer at all (`FOOTNOTE_ACROSS_LANGUAGE_FLOOR`),
where word overlap cannot, the question's words being in another language than the sources'.

Measured by `benchmarks/across_languages.py` (docs/benchmarks.md, "Chinese questions over
English documents").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from footnote.answer.points import is_label
from footnote.answer.sentence_spans import SentenceSpan
from footnote.core.hits import SearchHit
from footnote.core.vectors import closeness
from footnote.models.base import Embedder, Vector


def across_languages(
    embedder: Embedder,
    question: str,
    hits: Sequence[SearchHit],
    spans: Sequence[SentenceSpan],
    texts: Sequence[str],
) -> tuple[list[SentenceSpan], Vector, float]:
    """The sentences with the multilingual embedder's vectors, the question's vector, and the
    best closeness of a sentence to the question. A heading or title standing alone counts
    towards that best closeness (the section is about the question) but keeps no vector, so that
    it is not quoted as the answer: it names the section, and answers nothing."""
    question_vector = embedder.embed_query(question)
    vectors = embedder.embed_batch(list(texts))
    embedded = [
        replace(span, vector=None if is_label(hits[span.source], text) else vector)
        for span, text, vector in zip(spans, texts, vectors, strict=True)
    ]
    return embedded, question_vector, max(closeness(question_vector, vector) for vector in vectors)
