"""Answers first: an ingest in the same process waits at its next step while an answer is being
made, and an answer never waits for an ingest."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.foreground import FOREGROUND, Foreground
from footnote.models.base import Vector
from tests.fakes import HashingEmbedder, ScriptedGenerator


def test_a_wait_ends_when_no_answer_is_being_made_and_at_most_after_its_bound() -> None:
    foreground = Foreground()
    foreground.wait()  # none being made: returns at once
    with foreground.answering():
        foreground.wait(most=0.2)  # bounded: background work never stops for good
    with foreground.answering():
        waiter = threading.Thread(target=lambda: foreground.wait(most=60.0))
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive()  # held back while the answer runs
    waiter.join(timeout=30)
    assert not waiter.is_alive()  # let go once it ends, long before its bound


class SlowEmbedder(HashingEmbedder):
    """Takes its time over every batch, as a real model does over a large folder."""

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        time.sleep(0.05)
        return super().embed_batch(texts)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Application]:
    settings = Settings(home=tmp_path / "home", reader="extract", language_embedder="none")
    application = create_app(settings, embedder=SlowEmbedder(), generator=ScriptedGenerator([]))
    yield application
    application.close()


def _folder(folder: Path, files: int) -> Path:
    folder.mkdir()
    for number in range(files):
        words = " ".join(f"word{number}x{k}" for k in range(400))
        (folder / f"note{number}.md").write_text(f"# Note {number}\n\nBees dance to share food. {words}\n")
    return folder


def test_an_ingest_waits_while_an_answer_is_being_made(app: Application, tmp_path: Path) -> None:
    folder = _folder(tmp_path / "docs", 3)
    embedder = app.embedder
    assert isinstance(embedder, HashingEmbedder)
    before = len(embedder.calls)
    ingest = threading.Thread(target=app.ingest, args=([folder],))
    with FOREGROUND.answering():
        ingest.start()
        time.sleep(0.5)
        assert len(embedder.calls) == before and ingest.is_alive()
    ingest.join(timeout=30)
    assert not ingest.is_alive() and len(embedder.calls) > before
    assert app.chunk_count() >= 3


def test_an_answer_completes_while_an_ingest_is_still_running(app: Application, tmp_path: Path) -> None:
    app.ingest([_folder(tmp_path / "first", 1)])
    embedder = app.embedder
    assert isinstance(embedder, HashingEmbedder)
    started = len(embedder.calls)
    ingest = threading.Thread(target=app.ingest, args=([_folder(tmp_path / "more", 60)],))
    ingest.start()
    while len(embedder.calls) == started and ingest.is_alive():
        time.sleep(0.01)
    answer = app.answer_engine().ask("How do bees share food?")
    assert answer.citations and "Bees dance to share food." in answer.citations[0].quote
    assert ingest.is_alive()  # the answer did not wait for the ingest to end
    ingest.join(timeout=120)
