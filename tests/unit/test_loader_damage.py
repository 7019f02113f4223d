"""PDF and Word loaders: a damaged file is reported as one, a bug in footnote's own code is not."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import docx
import pypdf
import pytest

from footnote.errors import LoaderError
from footnote.ingest.loaders import docx as docx_loader
from footnote.ingest.loaders import load_document
from footnote.ingest.loaders import pdf as pdf_loader
from footnote.ingest.loaders.damage import raised_by
from tests.corpus import write_sample_pdf

PAGES = [["Basalt forms when lava cools quickly at the surface."], ["Granite cools slowly underground."]]


class OwnBug(RuntimeError):
    """Stands for a mistake in footnote's code: it must reach the caller as itself."""


def raise_own_bug(*args: Any, **kwargs: Any) -> Any:
    raise OwnBug("a bug in footnote")


def test_an_error_is_the_librarys_only_when_the_library_raised_it(tmp_path: Path) -> None:
    with pytest.raises(Exception) as damaged:
        pypdf.PdfReader(io.BytesIO(b"%PDF-1.4\nnot a pdf at all"))
    assert raised_by(damaged.value, pypdf)

    page = pypdf.PdfReader(write_sample_pdf(tmp_path / "rocks.pdf", PAGES)).pages[0]
    with pytest.raises(OwnBug) as called_back:  # footnote's visitor, called by pypdf
        page.extract_text(visitor_text=raise_own_bug)
    assert not raised_by(called_back.value, pypdf)
    with pytest.raises(OwnBug) as own:
        raise_own_bug()
    assert not raised_by(own.value, pypdf)


def test_a_truncated_pdf_is_still_reported_as_damaged(tmp_path: Path) -> None:
    whole = write_sample_pdf(tmp_path / "whole.pdf", PAGES).read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(whole[: len(whole) // 3])
    with pytest.raises(LoaderError, match="truncated or corrupt"):
        load_document(truncated)


def write_pdf(folder: Path) -> Path:
    return write_sample_pdf(folder / "rocks.pdf", PAGES, sections=["Basalt", "Granite"])


def write_docx(folder: Path, title: str = "Bridge notes") -> Path:
    document = docx.Document()
    document.core_properties.title = title
    document.add_heading("Bridges", level=1)
    document.add_paragraph("An arch bridge transfers its load into abutments at each end.")
    path = folder / "bridges.docx"
    document.save(str(path))
    return path


@pytest.mark.parametrize(
    ("module", "function", "write"),
    [
        (pdf_loader, "_page_text", write_pdf),  # runs on what pypdf extracted
        (pdf_loader, "_walk_outline", write_pdf),  # the optional outline, read through pypdf
        (docx_loader, "_heading_level", write_docx),  # runs on what python-docx read
    ],
)
def test_a_bug_in_footnotes_reading_code_surfaces_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: Any, function: str, write: Any
) -> None:
    path = write(tmp_path)
    assert load_document(path).blocks[0].heading_path  # the code under test runs on this file
    monkeypatch.setattr(module, function, raise_own_bug)
    with pytest.raises(OwnBug):
        load_document(path)


def test_a_damaged_word_document_is_reported_as_damaged(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<not-closed")
    with pytest.raises(LoaderError, match="Word document could not be read"):
        load_document(path)


def test_a_bug_while_reading_the_word_title_is_not_taken_for_unreadable_properties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_docx(tmp_path)
    assert load_document(path).title == "Bridge notes"
    title_of = docx_loader.short_title

    def broken_on_the_core_title(text: str) -> str:
        return raise_own_bug() if text == "Bridge notes" else title_of(text)

    monkeypatch.setattr(docx_loader, "short_title", broken_on_the_core_title)
    with pytest.raises(OwnBug):
        load_document(path)
