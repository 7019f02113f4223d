"""A registered retrieval signal is fused beside the keyword and dense lists once it has a weight."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.document import Block, Document
from footnote.errors import ConfigError
from footnote.ingest.pipeline import Ingestor
from footnote.retrieval import signals
from footnote.retrieval.retriever import RetrievalParams
from footnote.retrieval.signals import SignalQuery, retrieval_signal, signal_names
from tests.fakes import HashingEmbedder

TEXTS = {
    "/d/tides.txt": "tide tide tide moon harbour",
    "/d/moon.txt": "moon tide harbour",
    "/d/wall.txt": "harbour wall lighthouse",
}


@pytest.fixture
def lighthouses(monkeypatch: pytest.MonkeyPatch) -> list[SignalQuery]:
    """A signal named `lighthouses`, registered the normal way: the chunks that mention a lighthouse."""
    monkeypatch.setattr(signals, "_SIGNALS", dict(signals._SIGNALS))
    asked: list[SignalQuery] = []

    @retrieval_signal("lighthouses")
    def mentioning_lighthouses(query: SignalQuery) -> list[int]:
        asked.append(query)
        ids = list(query.catalog.chunk_ids())
        records = query.catalog.chunks(ids)
        return [chunk_id for chunk_id in ids if "lighthouse" in records[chunk_id].text]

    return asked


def stores(tmp_path: Path, **settings: object) -> Application:
    app = create_app(Settings(home=tmp_path / "home", **settings), embedder=HashingEmbedder())  # type: ignore[arg-type]
    documents = [Document(p, "text", "", t, [Block(t, 0, len(t))]) for p, t in TEXTS.items()]
    Ingestor(app.catalog, app.vectors, app.embedder).ingest_documents(documents)
    return app


@pytest.fixture
def app(tmp_path: Path, lighthouses: list[SignalQuery]) -> Iterator[Application]:
    application = stores(tmp_path, rrf_signal_weights={"lighthouses": 5.0})
    yield application
    application.close()


def test_a_weighted_signal_moves_the_ranking_and_sees_the_query(
    app: Application, lighthouses: list[SignalQuery]
) -> None:
    assert "lighthouses" in signal_names()
    params = app.retrieval_params(3)
    assert params.signals == (("lighthouses", 5.0),)
    without = [hit.path for hit in app.retriever().search("tide moon", RetrievalParams(limit=3))]
    with_signal = [hit.path for hit in app.retriever().search("tide moon", params)]
    assert without[0] == "/d/tides.txt" and with_signal[0] == "/d/wall.txt"
    assert lighthouses[-1].query == "tide moon" and lighthouses[-1].query_vector is not None


def test_a_signal_without_weight_is_not_computed(app: Application, lighthouses: list[SignalQuery]) -> None:
    for params in (RetrievalParams(limit=3, signals=(("lighthouses", 0.0),)), RetrievalParams(limit=3)):
        app.retriever().search("tide moon", params)
    assert lighthouses == []


def test_an_unknown_signal_is_refused_with_the_registered_ones(tmp_path: Path, lighthouses: object) -> None:
    app = stores(tmp_path, rrf_signal_weights={"titles": 1.0})
    try:
        with pytest.raises(ConfigError, match=r"unknown retrieval signal 'titles'.*registered: lighthouses"):
            app.retrieval_params(3)
    finally:
        app.close()
    with pytest.raises(ValueError, match="use a number from 0 to 10"):
        Settings(home=tmp_path / "home", rrf_signal_weights={"lighthouses": 11.0})
