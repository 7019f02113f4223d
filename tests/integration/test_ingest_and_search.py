"""Ingest a md/txt/html/pdf corpus into real SQLite and Chroma files and search it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.ingest.pipeline import IngestReport
from footnote.models.base import Embedder, Vector


class CountingEmbedder(Embedder):
    """The real embedder, counting every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        # The same vectors as `inner`: an index built with one is searched with the other.
        self.model_name, self.runtime, self.precision = inner.model_name, inner.runtime, inner.precision
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.embedded = 0

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        self.embedded += len(texts)
        return self.inner.embed_batch(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def test_every_file_is_ingested_and_embedded(ingested: tuple[Application, IngestReport]) -> None:
    app, report = ingested
    assert report.count("new") == 4 and not report.failed
    assert {doc.format for doc in app.documents()} == {"markdown", "text", "html", "pdf"}
    chunks = app.catalog.count_chunks()
    assert chunks >= 4
    assert report.chunks_embedded == chunks == app.vectors.count()
    assert app.catalog.count_pending() == 0


def test_chunk_spans_reproduce_the_source_text(ingested: tuple[Application, IngestReport]) -> None:
    app, _ = ingested
    for doc in app.documents():
        text = app.catalog.document_text(doc.id)
        ids = [hit.chunk_id for hit in app.search(doc.title, limit=50, mode="keyword")]
        records = [r for r in app.catalog.chunks(ids).values() if r.document_id == doc.id]
        assert records, f"no chunk of {doc.path} found by its title"
        for record in records:
            assert text[record.start : record.end] == record.text
        if doc.format in ("markdown", "text"):
            assert Path(doc.path).read_text(encoding="utf-8") == text


def test_pdf_chunks_carry_their_page_numbers(ingested: tuple[Application, IngestReport]) -> None:
    app, _ = ingested
    page_one = app.search("nucleus of a comet kilometres", limit=1, mode="keyword")[0]
    page_two = app.search("Halley 1986 2061", limit=1, mode="keyword")[0]
    assert page_one.path.endswith("comets.pdf") and page_one.page == 1
    assert page_two.path.endswith("comets.pdf") and page_two.page == 2


def test_markdown_chunks_keep_their_heading_path(ingested: tuple[Application, IngestReport]) -> None:
    app, _ = ingested
    hit = app.search("second variety pollen", limit=1, mode="keyword")[0]
    assert hit.heading_path == ("Orchard Notes", "Pollination")


def test_html_boilerplate_is_left_out(ingested: tuple[Application, IngestReport]) -> None:
    app, _ = ingested
    glaciers = next(doc for doc in app.documents() if doc.format == "html")
    text = app.catalog.document_text(glaciers.id)
    assert "persistent body of dense ice" in text
    assert "About us" not in text and "Copyright notice" not in text
    assert glaciers.url == "https://example.org/glaciers"


def test_search_finds_a_keyword_only_one_passage_contains(ingested: tuple[Application, IngestReport]) -> None:
    app, _ = ingested
    hits = app.search("zyxquartz", limit=3)
    assert hits and "Zyxquartz" in hits[0].text
    assert hits[0].keyword_rank == 1
    assert all("Zyxquartz" not in hit.text for hit in hits[1:])


def test_search_finds_a_paraphrase(ingested: tuple[Application, IngestReport]) -> None:
    app, _ = ingested
    # Shares no content word with "Most mountain glaciers have been shrinking since ...".
    hits = app.search("are ice rivers on peaks getting smaller", limit=3, mode="dense")
    assert any("shrinking" in hit.text for hit in hits)
    hybrid = app.search("are ice rivers on peaks getting smaller", limit=3)
    assert any("shrinking" in hit.text for hit in hybrid)


def test_reingesting_unchanged_files_embeds_nothing(
    corpus: Path, tmp_path: Path, real_embedder: Embedder
) -> None:
    counting = CountingEmbedder(real_embedder)
    app = create_app(Settings(home=tmp_path / "home"), embedder=counting)
    first = app.ingest([corpus])
    assert first.count("new") == 4 and counting.embedded == first.chunks_embedded > 0
    counting.embedded = 0
    second = app.ingest([corpus])
    assert second.count("unchanged") == 4
    assert second.chunks_embedded == 0 and counting.embedded == 0


def test_a_changed_file_replaces_its_chunks_and_vectors(
    corpus: Path, tmp_path: Path, real_embedder: Embedder
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    note = folder / "note.md"
    note.write_text("# Note\n\nThe meeting is on Tuesday in room Quillon.\n", encoding="utf-8")
    app = create_app(Settings(home=tmp_path / "home"), embedder=real_embedder)
    app.ingest([folder])
    note.write_text("# Note\n\nThe meeting moved to Thursday in room Brantle.\n", encoding="utf-8")
    report = app.ingest([folder])
    assert report.count("changed") == 1
    assert not app.search("Quillon", mode="keyword")
    assert "Brantle" in app.search("Brantle", mode="keyword")[0].text
    assert app.vectors.count() == app.catalog.count_chunks()


def test_deleting_a_document_removes_chunks_and_vectors(
    corpus: Path, tmp_path: Path, real_embedder: Embedder
) -> None:
    app = create_app(Settings(home=tmp_path / "home"), embedder=real_embedder)
    app.ingest([corpus])
    before = app.vectors.count()
    removed = app.delete_document(str(corpus / "orchard.md"))
    assert removed.chunk_count > 0
    assert app.vectors.count() == before - removed.chunk_count == app.catalog.count_chunks()
    assert not app.search("zyxquartz", mode="keyword")
