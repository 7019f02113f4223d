"""Scanned PDFs end to end: `footnote ingest` reads their pages by OCR, and `footnote ask` and
`footnote search`, separate processes with the real bundled models, cite the page the words are on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from footnote.ingest.loaders import load_document
from tests.e2e.conftest import footnote_json, ingest
from tests.store_modes import lasting_stores
from tests.unit.test_pdf_ocr import CHINESE_SCAN, ENGLISH_SCAN, needs_chinese_ocr, needs_tesseract

pytestmark = needs_tesseract


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the English and the Chinese scan ingested."""
    corpus = tmp_path_factory.mktemp("scans")
    for scan in (ENGLISH_SCAN, CHINESE_SCAN):
        shutil.copy(scan, corpus / scan.name)
    home = tmp_path_factory.mktemp("scans-home")
    lasting_stores(home)
    ingest(home, corpus)
    return home


def test_an_answer_from_a_scanned_page_cites_its_page(home: Path) -> None:
    answer = footnote_json(home, "ask", "When was the Bell Rock Lighthouse completed?")
    assert "1810" in answer["answer"] and not answer["abstained"], answer["answer"]
    read = load_document(ENGLISH_SCAN).text
    assert any(
        "1810" in citation["quote"]
        and citation["quote"] in read
        and citation["path"].endswith(ENGLISH_SCAN.name)
        and citation["page"] == 2
        for citation in answer["citations"]
    ), answer["citations"]


@needs_chinese_ocr
def test_a_chinese_scan_is_searched_and_quoted_from_its_page(home: Path) -> None:
    [hit] = footnote_json(home, "search", "军事防御工程", "-n", "1")
    assert hit["path"].endswith(CHINESE_SCAN.name) and hit["page"] == 1
    assert "军事防御工程" in hit["text"]
    # No model that writes Chinese: the answer is the checked quote of the page.
    answer = footnote_json(home, "ask", "明长城西起哪里？", FOOTNOTE_LANGUAGE_LLM="")
    assert any(
        "嘉峪关" in citation["quote"]
        and citation["path"].endswith(CHINESE_SCAN.name)
        and citation["page"] == 1
        for citation in answer["citations"]
    ), answer
