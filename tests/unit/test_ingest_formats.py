"""A fixture corpus of every supported format, ingested into real SQLite and Chroma files.

For each format: page numbers (PDF), heading paths, and that every chunk's span
reproduces its text in the stored document text, which in turn holds the source
text (verbatim for text formats, paragraph by paragraph for extracted ones).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import docx
import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core.formats import document_formats
from footnote.ingest.loaders import unsupported_reason
from footnote.ingest.pipeline import IngestReport
from tests.corpus import write_sample_pdf
from tests.fakes import HashingEmbedder
from tests.store_modes import lasting_settings

MARKDOWN = """# Field Guide

Moths are mostly nocturnal insects related to butterflies.

## Wings

| part | colour |
| --- | --- |
| forewing | grey |

### Scales

Wing scales give moths their colours and patterns.
"""

TEXT = "Tide tables\n\nHigh water at Brest is at 06:12 on the first of the month.\n"

HTML = """<!doctype html><html><head><title>Lighthouses</title>
<link rel="canonical" href="https://example.org/lighthouses"></head>
<body><header><a href="/">Site home</a></header>
<nav><a href="/a">Navigation link</a></nav>
<h1>Lighthouses</h1>
<p>A lighthouse marks dangerous coasts with a light visible from the sea.</p>
<h2>Lenses</h2>
<p>The Fresnel lens concentrates the lamp's light into a narrow beam.</p>
<aside>Related: buoys</aside>
<footer>Copyright footer text</footer></body></html>
"""

PDF_PAGES = [
    ["Volcanoes form where magma reaches the surface of a planet."],
    ["Basalt is the most common volcanic rock on Earth."],
]
PDF_SECTIONS = ["Formation", "Rocks"]

DOCX_PARAGRAPHS = {
    "intro": "Bridges carry roads and railways across rivers and valleys.",
    "arch": "An arch bridge transfers its load into abutments at each end.",
}


def write_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Bridges"
    document.add_heading("Bridges", level=1)
    document.add_paragraph(DOCX_PARAGRAPHS["intro"])
    document.add_heading("Types", level=2)
    document.add_heading("Arch", level=3)
    document.add_paragraph(DOCX_PARAGRAPHS["arch"])
    table = document.add_table(rows=2, cols=2)
    for row, values in enumerate((("span", "material"), ("160 m", "stone"))):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    document.save(str(path))


def write_every_format(folder: Path) -> Path:
    """A file of every registered format (a new loader adds one here) and two that are skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "moths.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "tides.txt").write_text(TEXT, encoding="utf-8")
    (folder / "lighthouses.html").write_text(HTML, encoding="utf-8")
    write_sample_pdf(folder / "volcanoes.pdf", PDF_PAGES, title="Volcanoes", sections=PDF_SECTIONS)
    write_docx(folder / "bridges.docx")
    (folder / "moths-archive.md.gz").write_bytes(gzip.compress(MARKDOWN.encode("utf-8")))
    (folder / "tides-archive.txt.gz").write_bytes(gzip.compress(TEXT.encode("utf-8")))
    (folder / "photo.jpeg").write_bytes(b"\xff\xd8\xff\xe0 not really a photo")
    (folder / "bundle.tar.gz").write_bytes(gzip.compress(b"tar data"))
    return folder


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Application, IngestReport, Path]:
    folder = write_every_format(tmp_path_factory.mktemp("formats"))
    home = tmp_path_factory.mktemp("home")
    app = create_app(Settings(home=home, **lasting_settings(home)), embedder=HashingEmbedder())
    return app, app.ingest([folder]), folder


def chunks_of(
    app: Application, name: str
) -> tuple[str, list[tuple[str, int, int, tuple[str, ...], int | None]]]:
    record = next(doc for doc in app.documents() if Path(doc.path).name == name)
    text = app.catalog.document_text(record.id)
    ids = [i for i, _ in app.catalog.chunk_ids().items()]
    rows = sorted(
        (c.ordinal, c.text, c.start, c.end, c.heading_path, c.page)
        for c in app.catalog.chunks(ids).values()
        if c.document_id == record.id
    )
    assert rows, f"{name} has no chunks"
    for _, chunk_text, start, end, _, _ in rows:
        assert text[start:end] == chunk_text
    return text, [(t, s, e, h, p) for _, t, s, e, h, p in rows]


def chunk_with(chunks: list[tuple[str, int, int, tuple[str, ...], int | None]], needle: str) -> tuple:
    return next(chunk for chunk in chunks if needle in chunk[0])


def test_every_supported_file_is_ingested_and_others_are_skipped_with_a_reason(
    ingested: tuple[Application, IngestReport, Path],
) -> None:
    app, report, folder = ingested
    supported = [path for path in folder.iterdir() if unsupported_reason(path) is None]
    assert len(supported) >= 7 and report.count("new") == len(supported) and not report.failed
    skipped = {Path(o.path).name: o.error or "" for o in report.files if o.status == "skipped"}
    assert set(skipped) == {"photo.jpeg", "bundle.tar.gz"}
    assert "unsupported file type '.jpeg'" in skipped["photo.jpeg"]
    assert "'.tar.gz'" in skipped["bundle.tar.gz"] and ".md.gz" in skipped["bundle.tar.gz"]
    assert {doc.format for doc in app.documents()} == set(document_formats())
    assert app.vectors.count() == app.catalog.count_chunks() and app.catalog.count_pending() == 0


@pytest.mark.parametrize("name", ["moths.md", "moths-archive.md.gz"])
def test_markdown_spans_and_heading_paths(
    ingested: tuple[Application, IngestReport, Path], name: str
) -> None:
    app, _, _ = ingested
    text, chunks = chunks_of(app, name)
    assert text == MARKDOWN
    assert chunk_with(chunks, "nocturnal")[3] == ("Field Guide",)
    assert chunk_with(chunks, "forewing")[3] == ("Field Guide", "Wings")
    assert chunk_with(chunks, "Wing scales")[3] == ("Field Guide", "Wings", "Scales")
    assert all(chunk[4] is None for chunk in chunks)


@pytest.mark.parametrize("name", ["tides.txt", "tides-archive.txt.gz"])
def test_text_spans(ingested: tuple[Application, IngestReport, Path], name: str) -> None:
    app, _, _ = ingested
    text, chunks = chunks_of(app, name)
    assert text == TEXT
    chunk = chunk_with(chunks, "Brest")
    assert TEXT[chunk[1] : chunk[2]] == chunk[0]


def test_html_keeps_content_and_canonical_url_and_drops_chrome(
    ingested: tuple[Application, IngestReport, Path],
) -> None:
    app, _, _ = ingested
    record = next(doc for doc in app.documents() if doc.format == "html")
    assert record.url == "https://example.org/lighthouses" and record.title == "Lighthouses"
    text, chunks = chunks_of(app, "lighthouses.html")
    for chrome in ("Site home", "Navigation link", "Related: buoys", "Copyright footer"):
        assert chrome not in text
    lens = "The Fresnel lens concentrates the lamp's light into a narrow beam."
    chunk = chunk_with(chunks, "Fresnel")
    assert lens in chunk[0] and chunk[3] == ("Lighthouses", "Lenses")
    start = text.index(lens)
    assert chunk[1] <= start and start + len(lens) <= chunk[2]


def test_pdf_pages_and_outline_headings(ingested: tuple[Application, IngestReport, Path]) -> None:
    app, _, _ = ingested
    text, chunks = chunks_of(app, "volcanoes.pdf")
    magma = chunk_with(chunks, "magma")
    basalt = chunk_with(chunks, "Basalt")
    assert magma[4] == 1 and magma[3] == ("Formation",)
    assert basalt[4] == 2 and basalt[3] == ("Rocks",)
    assert PDF_PAGES[1][0] in text[basalt[1] : basalt[2]]


def test_docx_headings_and_tables(ingested: tuple[Application, IngestReport, Path]) -> None:
    app, _, _ = ingested
    record = next(doc for doc in app.documents() if doc.format == "docx")
    assert record.title == "Bridges"
    text, chunks = chunks_of(app, "bridges.docx")
    intro = chunk_with(chunks, "Bridges carry")
    arch = chunk_with(chunks, "abutments")
    assert intro[3] == ("Bridges",)
    assert arch[3] == ("Bridges", "Types", "Arch")
    assert DOCX_PARAGRAPHS["arch"] in text[arch[1] : arch[2]]
    table = chunk_with(chunks, "160 m")
    assert "span | material\n160 m | stone" in table[0]
    assert table[4] is None


def test_chunks_with_their_title_and_headings_fit_the_embedders_window(tmp_path: Path) -> None:
    """A title longer than the room kept for it shrinks the chunks instead of being truncated away."""
    embedder = HashingEmbedder()
    embedder.max_tokens = 64
    title = " ".join(f"word{i}" for i in range(18))
    body = " ".join(f"Sentence number {i} says something about rivers." for i in range(60))
    folder = tmp_path / "docs"
    folder.mkdir()
    section = " ".join(f"part{i}" for i in range(16))
    (folder / "long.md").write_text(f"# {title}\n\n## {section}\n\n{body}\n", encoding="utf-8")
    app = create_app(Settings(home=tmp_path / "home", chunk_tokens=60, chunk_overlap=8), embedder=embedder)
    app.ingest([folder])
    records = app.catalog.chunks(list(app.catalog.chunk_ids())).values()
    assert len(records) > 5
    assert all(embedder.count_tokens(r.embedding_text()) <= embedder.max_tokens for r in records)


def test_chunks_fill_the_window_and_split_evenly(tmp_path: Path) -> None:
    """Without overlap, a text file that fits the window whole is one chunk; a longer one splits evenly."""
    embedder = HashingEmbedder()
    embedder.max_tokens = 64
    sentence = "Rivers carry silt to the sea."  # 7 words and a full stop: 11 tokens by estimate
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "short.txt").write_text(f"Short title\n\n{' '.join([sentence] * 4)}\n", encoding="utf-8")
    (folder / "long.txt").write_text(f"Long title\n\n{' '.join([sentence] * 9)}\n", encoding="utf-8")
    app = create_app(Settings(home=tmp_path / "home", chunk_tokens=256, chunk_overlap=0), embedder=embedder)
    app.ingest([folder])
    records = list(app.catalog.chunks(list(app.catalog.chunk_ids())).values())
    short = [r for r in records if r.path.endswith("short.txt")]
    assert len(short) == 1 and short[0].text.startswith("Short title\n\nRivers")
    long = sorted((r for r in records if r.path.endswith("long.txt")), key=lambda r: r.start)
    assert len(long) == 2 and long[0].text.startswith("Long title\n\nRivers")
    sizes = [embedder.count_tokens(r.embedding_text()) for r in long]
    assert max(sizes) <= embedder.max_tokens and abs(sizes[0] - sizes[1]) <= 15, sizes
