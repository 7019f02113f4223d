"""Scanned PDF pages read by OCR at ingest: their text and page numbers, pages with a text layer
left as they are, `FOOTNOTE_OCR`, and the refusals when nothing can be read.

The scans are `tests/fixtures/scanned-*.pdf` (page images only, made by
`scripts/make_scanned_pdf.py`); reading them needs Debian's tesseract.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from PIL.Image import Image
from pydantic import ValidationError
from pypdf import PdfReader, PdfWriter

from footnote.application import create_app
from footnote.config import Settings
from footnote.core.document import Document
from footnote.errors import LoaderError
from footnote.ingest.loaders import LoadOptions, load_document, pdf
from footnote.ingest.loaders.ocr import Ocr, OcrError, cleaned, find_ocr, without_cjk_gaps
from tests.corpus import write_sample_pdf
from tests.fakes import HashingEmbedder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ENGLISH_SCAN = FIXTURES / "scanned-bell-rock.pdf"  # two pages; the year it was completed is on page 2
CHINESE_SCAN = FIXTURES / "scanned-great-wall-zh.pdf"  # one page

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract is not installed: apt install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim",
)
needs_chinese_ocr = pytest.mark.skipif(
    "chi_sim" not in getattr(find_ocr(), "languages", ""),
    reason="tesseract or its simplified Chinese data is not installed: "
    "apt install tesseract-ocr tesseract-ocr-chi-sim",
)

NO_TEXT_LAYER = "PDF has no text layer (scanned images?); run OCR first, e.g. ocrmypdf"
NO_TESSERACT = (
    "PDF has no text layer (scanned images?) and tesseract is not installed: "
    "apt install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim, or run OCR first (ocrmypdf)"
)


def squeezed(text: str) -> str:
    return " ".join(text.split())


def pages_and_texts(document: Document) -> list[tuple[int | None, str]]:
    return [(block.page, squeezed(block.text)) for block in document.blocks]


def without_tesseract(monkeypatch: pytest.MonkeyPatch) -> None:
    which = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda name, *args, **kw: None if name == "tesseract" else which(name)
    )


def test_the_fixtures_have_no_text_layer() -> None:
    for scan in (ENGLISH_SCAN, CHINESE_SCAN):
        assert all(not page.extract_text().strip() for page in PdfReader(scan).pages)
        assert scan.stat().st_size < 300_000


@needs_tesseract
def test_a_scanned_page_is_read_with_its_page_number() -> None:
    document = load_document(ENGLISH_SCAN)
    assert document.format == "pdf"
    assert pages_and_texts(document) == [
        (
            1,
            "The Bell Rock Lighthouse stands on a reef eleven miles off the east coast of Scotland, "
            "in the mouth of the Firth of Tay.",
        ),
        (
            1,
            "The reef is covered by the sea at high tide, so the masons could only work for a few "
            "hours at low water, and many ships were wrecked on it before the tower was built.",
        ),
        (
            2,
            "Robert Stevenson completed the Bell Rock Lighthouse in 1810 after four summers of work "
            "on the reef.",
        ),
        (
            2,
            "Its light was first shown in February 1811, and it is the oldest surviving sea-washed "
            "lighthouse in the world.",
        ),
    ]
    document.check_spans()


@needs_chinese_ocr
def test_a_chinese_scan_is_read_without_spaces_between_characters() -> None:
    document = load_document(CHINESE_SCAN)
    assert {block.page for block in document.blocks} == {1}
    # Loosely: tesseract may misread a character here and there, but not these runs.
    assert "古代修建的军事防御工程" in document.text
    assert "明长城西起嘉峪关" in document.text
    assert " " not in document.text
    document.check_spans()


@needs_tesseract
def test_a_mixed_pdf_reads_only_the_pages_without_text(tmp_path: Path) -> None:
    printed = write_sample_pdf(
        tmp_path / "printed.pdf",
        [["Lighthouse keepers trimmed the wicks every night."], ["Automation replaced the keepers."]],
    )
    mixed = PdfWriter()
    mixed.add_page(PdfReader(printed).pages[0])
    mixed.add_page(PdfReader(ENGLISH_SCAN).pages[1])
    mixed.add_page(PdfReader(printed).pages[1])
    mixed.write(tmp_path / "mixed.pdf")

    document = load_document(tmp_path / "mixed.pdf")
    text_layer = load_document(printed, LoadOptions(ocr="off"))
    pages = pages_and_texts(document)
    assert [text for page, text in pages if page != 2] == [text for _, text in pages_and_texts(text_layer)]
    assert [page for page, _ in pages] == [1, 2, 2, 3]
    assert "Robert Stevenson completed the Bell Rock Lighthouse in 1810" in pages[1][1]
    document.check_spans()


def test_ocr_off_keeps_the_refusal() -> None:
    with pytest.raises(LoaderError) as caught:
        load_document(ENGLISH_SCAN, LoadOptions(ocr="off"))
    assert caught.value.problem == NO_TEXT_LAYER


def test_without_tesseract_the_refusal_names_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    without_tesseract(monkeypatch)
    with pytest.raises(LoaderError) as caught:
        load_document(ENGLISH_SCAN)
    assert caught.value.problem == NO_TESSERACT


def test_without_tesseract_a_mixed_pdf_keeps_its_text_pages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    printed = write_sample_pdf(tmp_path / "printed.pdf", [["Foghorns sound in thick weather."]])
    mixed = PdfWriter()
    mixed.add_page(PdfReader(ENGLISH_SCAN).pages[0])
    mixed.add_page(PdfReader(printed).pages[0])
    mixed.write(tmp_path / "mixed.pdf")
    without_tesseract(monkeypatch)
    assert pages_and_texts(load_document(tmp_path / "mixed.pdf")) == [(2, "Foghorns sound in thick weather.")]


@needs_tesseract
def test_pages_with_nothing_to_read_are_refused(tmp_path: Path) -> None:
    blank = write_sample_pdf(tmp_path / "blank.pdf", [[], []])
    with pytest.raises(LoaderError) as caught:
        load_document(blank)
    assert caught.value.problem == (
        "PDF has no text layer and OCR (tesseract) read no text in its page images: "
        "check that the pages are not blank and that the scan is legible"
    )


def test_ocr_output_loses_the_gaps_between_chinese_characters() -> None:
    assert without_cjk_gaps("长 城 是 中 国 ， 全 长 约 八 千") == "长城是中国，全长约八千"
    assert without_cjk_gaps("修建的\n军事工程。\n\n明长城") == "修建的军事工程。\n\n明长城"
    assert (
        without_cjk_gaps("built in 1810 after four\nsummers 长 城")
        == "built in 1810 after four\nsummers 长城"
    )
    assert cleaned("First line  \nsecond line\n\n\n\nNext paragraph\n\x0c") == (
        "First line\nsecond line\n\nNext paragraph"
    )


def test_footnote_ocr_reaches_the_ingest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FOOTNOTE_OCR", "off")
    settings = Settings(home=tmp_path / "home")
    assert settings.ocr == "off"
    app = create_app(settings, embedder=HashingEmbedder())
    [outcome] = app.ingest([ENGLISH_SCAN]).files
    assert (outcome.status, outcome.error) == ("failed", NO_TEXT_LAYER)


def test_footnote_ocr_takes_auto_or_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().ocr == "auto"
    monkeypatch.setenv("FOOTNOTE_OCR", "on")
    with pytest.raises(ValidationError, match="ocr"):
        Settings()


@needs_tesseract
def test_tesseract_runs_with_one_openmp_thread_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytesseract

    monkeypatch.delenv("OMP_THREAD_LIMIT", raising=False)
    find_ocr()
    started_with = pytesseract.pytesseract.environ
    assert dict(started_with)["OMP_THREAD_LIMIT"] == "1"
    assert dict(started_with)["PATH"] == os.environ["PATH"]
    monkeypatch.setenv("OMP_THREAD_LIMIT", "2")
    assert dict(started_with)["OMP_THREAD_LIMIT"] == "2"


class BrokenTesseract(Ocr):
    """Tesseract that fails on every image, as it does when its language data is damaged."""

    def image_text(self, image: Image, dpi: int | None = None) -> str:
        raise OcrError("Error opening data file eng.traineddata")


def test_a_tesseract_failure_names_the_page_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "find_ocr", lambda: BrokenTesseract("eng"))
    with pytest.raises(LoaderError) as caught:
        load_document(ENGLISH_SCAN)
    assert caught.value.problem == (
        "tesseract could not read page 1 (Error opening data file eng.traineddata); "
        "check `tesseract --list-langs`, or set FOOTNOTE_OCR=off"
    )
