"""A small mixed-format corpus, ingested once per module with the real embedder and stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.ingest.pipeline import IngestReport
from footnote.models.base import Embedder
from tests.corpus import write_sample_pdf
from tests.store_modes import lasting_settings

MARKDOWN = """# Orchard Notes

Apple trees need a cold winter to set fruit well.

## Pollination

Most apple varieties cannot pollinate themselves. Growers plant a second variety nearby,
and bees carry pollen between them. The rare cultivar Zyxquartz Pippin flowers in late May.

## Harvest

Apples are ready when the seeds turn brown and the fruit comes away with a gentle twist.
"""

TEXT = """Sourdough baking

A sourdough starter is a culture of wild yeast and lactic acid bacteria.
Feed the starter flour and water every day to keep it active.

Long, cool fermentation gives the bread its sour taste and open crumb.
"""

HTML = """<!doctype html><html><head><title>Glacier Facts</title>
<link rel="canonical" href="https://example.org/glaciers"></head>
<body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<main><h1>Glaciers</h1>
<p>A glacier is a persistent body of dense ice that moves under its own weight.</p>
<h2>Retreat</h2>
<p>Most mountain glaciers have been shrinking since the middle of the nineteenth century.</p>
</main><footer>Copyright notice</footer></body></html>
"""

PDF_PAGES = [
    [
        "Comets are icy bodies that release gas and dust when they pass close to the Sun.",
        "The nucleus of a comet is usually only a few kilometres across.",
    ],
    [
        "Halley's Comet returns to the inner Solar System roughly every 76 years.",
        "Its last appearance was in 1986 and the next is expected in 2061.",
    ],
]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "orchard.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "sourdough.txt").write_text(TEXT, encoding="utf-8")
    (folder / "glaciers.html").write_text(HTML, encoding="utf-8")
    write_sample_pdf(folder / "comets.pdf", PDF_PAGES, title="Comets")
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def ingested(
    corpus: Path, tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder
) -> tuple[Application, IngestReport]:
    home = tmp_path_factory.mktemp("home")
    settings = Settings(home=home, **lasting_settings(home))
    app = create_app(settings, embedder=real_embedder)
    report = app.ingest([corpus])
    return app, report
