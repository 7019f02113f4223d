"""Every list of document formats shown to a user derives from the loaders' registry.

The loaders register the formats of the documents they make (`footnote.core.formats`);
search filters and the `--format` help of `footnote search` read that one list, so a
format that can be ingested can be searched for, and the ingest command's docs name them all.
The HTTP API takes no format filter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from footnote.application import Application, create_app
from footnote.config import Settings
from footnote.core import formats
from footnote.core.document import Block, Document
from footnote.core.filters import build_filter
from footnote.errors import QueryError
from footnote.ingest import loaders
from footnote.ingest.loaders import SUPPORTED_SUFFIXES, Loader, loader_for, register_loader
from tests.conftest import REPO
from tests.fakes import HashingEmbedder
from tests.store_modes import lasting_settings
from tests.unit.test_ingest_formats import write_every_format


def formats_of_loaders() -> set[str]:
    return {name for suffix in SUPPORTED_SUFFIXES for name in loader_for(Path(f"f{suffix}")).formats_made}


def test_the_registry_holds_the_formats_of_every_registered_loader() -> None:
    assert set(formats.document_formats()) == formats_of_loaders()
    assert {"markdown", "text", "html", "pdf", "docx"} <= set(formats.document_formats())
    assert "gzip" not in formats.document_formats()  # a .md.gz document is markdown


def test_a_search_filter_accepts_every_registered_format_and_names_them_all_when_refusing() -> None:
    for name in formats.document_formats():
        search_filter = build_filter(formats=[name])
        assert search_filter is not None and search_filter.formats == (name,)
    with pytest.raises(QueryError) as refused:
        build_filter(formats=["spreadsheet"])
    assert refused.value.args[0].endswith(f"use one of {', '.join(formats.document_formats())}")


class NotebookLoader(Loader):
    suffixes = (".ipynb",)
    format = "notebook"

    def load(self, path: Path) -> Document:
        text = path.read_text(encoding="utf-8")
        return Document(str(path), self.format, path.stem, text, [Block(text, 0, len(text))])


def test_a_newly_registered_loader_makes_its_format_searchable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "_FORMATS", dict(formats._FORMATS))
    monkeypatch.setattr(loaders, "_LOADERS", dict(loaders._LOADERS))
    with pytest.raises(QueryError):
        build_filter(formats=["notebook"])
    register_loader(NotebookLoader())
    assert formats.document_formats()[-1] == "notebook"
    assert build_filter(formats=["notebook"]) is not None


def test_search_format_help_lists_every_registered_format() -> None:
    from footnote.cli import main

    result = CliRunner().invoke(main.app, ["search", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    help_text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    assert f"Only this format (repeatable): {', '.join(formats.document_formats())}." in help_text


@pytest.fixture
def every_format(tmp_path: Path) -> Iterator[Application]:
    folder = write_every_format(tmp_path / "corpus")
    home = tmp_path / "home"
    app = create_app(Settings(home=home, **lasting_settings(home)), embedder=HashingEmbedder())
    app.ingest([folder])
    yield app
    app.close()


def test_every_ingested_format_is_registered_and_search_format_docx_finds_the_word_document(
    every_format: Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    from footnote.cli import main

    assert {doc.format for doc in every_format.documents()} == set(formats.document_formats())
    monkeypatch.setattr(main, "open_app", lambda: every_format)
    result = CliRunner().invoke(main.app, ["search", "bridges rivers", "--format", "docx", "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)
    assert hits and {Path(hit["path"]).name for hit in hits} == {"bridges.docx"}


def test_the_ingest_command_docs_name_every_registered_format() -> None:
    lines = (REPO / "docs" / "cli.md").read_text(encoding="utf-8").splitlines()
    row = next(line for line in lines if line.startswith("| `footnote ingest PATH...`")).lower()
    assert [name for name in formats.document_formats() if name not in row] == []
