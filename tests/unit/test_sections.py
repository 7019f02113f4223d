"""The section model: which retrieved chunks a broad answer draws its points from, the file it
ships in, the features it reads, how it moves the points, and how it is trained."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from footnote.answer.citations import SupportModels
from footnote.answer.engine import AnswerEngine
from footnote.answer.points import ScoredSentences, chosen_sections, chunk_weights, select_points
from footnote.answer.policy import EVIDENCE_READER, AnswerPolicy
from footnote.answer.reading import Reading as SourceReading
from footnote.answer.sections import (
    FEATURES,
    SECTIONS_FILE,
    ChunkReadings,
    SectionModel,
    bundled_sections,
    open_sections,
    read_chunks,
    read_sections,
    section_features,
    weighed_sections,
)
from footnote.answer.sentence_spans import sentence_spans
from footnote.application import create_app
from footnote.config import Settings
from footnote.core.hits import SearchHit
from footnote.errors import ConfigError
from footnote.models.sentence_reader import Reading, SentenceReader
from footnote.training.sections import SectionExample, manifest, train_sections
from tests.fakes import HashingEmbedder, ScriptedGenerator


def hit(
    number: int, text: str, document: int, keyword: int | None = None, dense: int | None = None
) -> SearchHit:
    return SearchHit(
        number,
        document,
        f"doc{document}.md",
        f"doc {document}",
        text,
        0,
        len(text),
        heading_path=(f"Part {number}",),
        keyword_rank=keyword,
        dense_rank=dense,
    )


def scored_of(hits: Sequence[SearchHit], by_chunk: Sequence[float]) -> ScoredSentences:
    spans = sentence_spans(list(hits))
    texts = [hits[s.source].text[s.start : s.end] for s in spans]
    return ScoredSentences(spans, texts, [by_chunk[s.source] for s in spans], by_reader=True)


def only(feature: str, weight: float, bonus: float = 1.0) -> SectionModel:
    """A model that reads one feature alone, unscaled."""
    weights = tuple(weight if name == feature else 0.0 for name in FEATURES)
    zeros, ones = (0.0,) * len(FEATURES), (1.0,) * len(FEATURES)
    return SectionModel(weights, 0.0, zeros, ones, bonus)


class WordReader(SentenceReader):
    """Scores a candidate by how many of the question's words it holds."""

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        asked = set(question.lower().split())
        return Reading([float(len(asked & set(c.lower().split()))) for c in candidates])


def test_the_bundled_section_model_is_pinned_and_reads_todays_features() -> None:
    model = bundled_sections()
    shipped = json.loads(SECTIONS_FILE.read_text(encoding="utf-8"))
    assert tuple(shipped["features"]) == FEATURES and len(model.weights) == len(FEATURES)
    assert model.bonus in (1.0, 2.0, 4.0)
    # The file says what its answers scored, in sample and with folds by document.
    assert {"in_sample", "cross_validated_by_document"} <= set(shipped["complete"][f"bonus_{model.bonus:g}"])


def test_a_section_file_of_other_features_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "sections.json"
    path.write_text(json.dumps({**manifest(only("rank", 1.0)), "features": ["rank"]}), encoding="utf-8")
    with pytest.raises(ConfigError, match="footnote train sections"):
        read_sections(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a section model"):
        read_sections(path)


def test_a_written_model_reads_back_and_off_means_the_reader_alone(tmp_path: Path) -> None:
    path = tmp_path / "sections.json"
    path.write_text(json.dumps(manifest(only("code", 2.0, bonus=4.0))), encoding="utf-8")
    assert open_sections(str(path)) == only("code", 2.0, bonus=4.0)
    assert open_sections("off") is None
    with pytest.raises(ConfigError, match="off"):
        open_sections(str(tmp_path / "missing.json"))


def test_features_follow_the_hits_and_their_lists() -> None:
    hits = [
        hit(0, "Plain words here.", 1, keyword=1, dense=None),
        hit(1, "Use `--flag` = [x].", 2, keyword=None, dense=3),
        hit(2, "More plain words.", 1, keyword=2, dense=1),
    ]
    readings = ChunkReadings([0.5, 1.5, 2.5], [-1.0, 0.0, 1.0], [0.9, 0.6, 0.8])
    rows = section_features(hits, scored_of(hits, [0.0, -2.0, -1.0]), readings)
    named = [dict(zip(FEATURES, row, strict=True)) for row in rows]
    assert [r["rank"] for r in named] == [0.0, 1.0, 2.0]
    assert named[1]["keyword_rank"] == pytest.approx(math.log1p(99))  # absent from the list
    assert named[0]["dense_rank"] == pytest.approx(math.log1p(99)) and named[2][
        "dense_rank"
    ] == pytest.approx(math.log1p(1))
    assert [r["same_document"] for r in named] == [2.0, 1.0, 2.0]
    assert [r["document_rank"] for r in named] == [0.0, 1.0, 0.0]
    assert named[0]["best_sentence"] == 0.0 and named[1]["best_sentence"] == -2.0
    assert named[0]["similarity"] == 0.0 and named[1]["similarity"] == pytest.approx(-0.3)
    assert named[1]["code"] > named[0]["code"] == 0.0
    assert [r["chunk_read"] for r in named] == [0.5, 1.5, 2.5]


def test_the_models_logit_moves_the_section_the_points_come_from() -> None:
    hits = [hit(0, "The change log mentions the function.", 1), hit(1, "The function works like this.", 2)]
    scored = scored_of(hits, [0.0, -6.0])  # the reader weighs the change log far above
    readings = ChunkReadings([0.0, 5.0], [0.0, 0.0], [0.0, 0.0])
    assert chosen_sections(scored) == [0]
    weighed = weighed_sections(only("chunk_read", 1.0, bonus=2.0), hits, scored, readings)
    assert chosen_sections(weighed)[0] == 1
    assert weighed.by_reader
    assert select_points(hits, weighed, 6)[0].source == 1


def test_chunk_weights_hold_scores_far_apart() -> None:
    hits = [hit(0, "One. Two.", 1), hit(1, "Three.", 2)]
    weights = chunk_weights(scored_of(hits, [-2000.0, 0.0]))
    assert weights[1] == 0.0 and weights[0] == pytest.approx(-2000.0 + math.log(2))


def test_chunks_are_read_whole_and_by_their_headings() -> None:
    hits = [hit(0, "Grind the beans finely.", 1), hit(1, "Tea wants cooler water.", 2)]
    readings = read_chunks("how to grind beans", hits, WordReader(), HashingEmbedder())
    assert readings.chunk[0] > readings.chunk[1]
    assert len(readings.heading) == len(readings.similarity) == 2
    assert readings.similarity[0] > readings.similarity[1]


def _examples() -> list[SectionExample]:
    """Twenty questions over ten documents: the chunk holding the key point is read well whole
    (chunk_read) while the reader weighs another chunk's sentence far above it."""
    examples = []
    for number in range(20):
        document = number // 2
        hits = [hit(k, f"Sentence {k} of question {number}.", 100 * document + k) for k in range(3)]
        right = 1 + number % 2
        readings = ChunkReadings([5.0 if k == right else 0.0 for k in range(3)], [0.0] * 3, [0.5] * 3)
        text = hits[right].text

        def complete(quotes: Sequence[str], text: str = text) -> bool:
            return any(text in quote or quote in text for quote in quotes)

        examples.append(
            SectionExample(
                group=f"doc{document}",
                kind="summary" if number % 2 else "list",
                hits=hits,
                scored=scored_of(hits, [0.0, -6.0, -6.0]),
                readings=readings,
                labels=[int(k == right) for k in range(3)],
                complete=complete,
            )
        )
    return examples


def test_training_chooses_the_bonus_by_folds_and_reports_beside_the_reader_alone() -> None:
    model, report = train_sections(_examples(), point_words=5)
    assert report["complete"]["reader_alone"]["all"] == 0.0
    chosen = report["complete"][f"bonus_{model.bonus:g}"]
    assert chosen["cross_validated_by_document"]["all"] == 1.0
    assert set(chosen["in_sample"]) == {"all", "list", "summary"}
    assert report["weights"][FEATURES.index("chunk_read")] > 0


class LuckyReader(SentenceReader):
    """Reads one sentence as answering, every other as not."""

    def read_batch(self, question: str, candidates: Sequence[str]) -> Reading:
        return Reading([8.0 if "lucky" in c else -8.0 for c in candidates])


def test_whether_the_sources_answer_is_judged_on_the_first_five_of_ten(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "note.md").write_text("# Note\n\nNothing here.\n", encoding="utf-8")
    app = create_app(
        Settings(home=tmp_path / "home", language_embedder="none"),
        embedder=HashingEmbedder(),
        generator=ScriptedGenerator([]),
    )
    try:
        policy = AnswerPolicy(app.retrieval_params(5), reader=EVIDENCE_READER, broad_sources=10)
        models = SupportModels(app.embedder, None, LuckyReader())
        engine = AnswerEngine(app.retriever(), app.generator, models, policy)
        question = "Summarize what the notes say."

        def read(lucky_at: int) -> float | None:
            texts = [
                "The lucky sentence says it all." if n == lucky_at else f"Note {n} says little."
                for n in range(10)
            ]
            hits = [hit(n, text, n) for n, text in enumerate(texts)]
            checker = engine.support.checker(hits, question)
            _, answerable, scored = SourceReading(engine).evidence(question, checker, question, prose=True)
            assert len({span.source for span in scored.spans}) == 10  # every chunk is read for points
            return answerable.read

        assert (read(lucky_at=2) or 0.0) > 0.9
        assert (read(lucky_at=7) or 1.0) < 0.1  # beyond the first five: offers points, not an answer
    finally:
        app.close()
