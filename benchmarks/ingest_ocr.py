"""How long OCR of scanned PDF pages takes at ingest, in seconds per page.

Reads the committed scans (`tests/fixtures/scanned-*.pdf`: two English pages, one Chinese page)
and a larger one made here, ten full English pages (the demo corpus's volcano text, rendered by
`scripts/make_scanned_pdf.py` at its 150 dpi), each with the PDF loader as `footnote ingest`
runs it (FOOTNOTE_OCR=auto: tesseract with every language it has of English and simplified
Chinese), then ingests all of them end to end (OCR, chunking, embedding, storing) with the
application's default embedder. Prints and saves the JSON under benchmarks/results/.

    python benchmarks/ingest_ocr.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from make_sample_pdf import ERUPTIONS, TYPES_OF_VOLCANOES  # noqa: E402
from make_scanned_pdf import FIXTURES, latin_font, write_scanned_pdf  # noqa: E402
from pypdf import PdfReader  # noqa: E402

from footnote.application import create_app  # noqa: E402
from footnote.config import Settings  # noqa: E402
from footnote.ingest.loaders import load_document  # noqa: E402
from footnote.ingest.loaders.ocr import OCR_PACKAGES, find_ocr  # noqa: E402
from footnote.models.cpu import machine  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
LARGE_PAGES = 10
PARAGRAPHS_PER_PAGE = 6


def large_scan(folder: Path) -> Path:
    """Ten full pages, each six of the demo corpus's ten volcano paragraphs, starting one further on."""
    paragraphs = TYPES_OF_VOLCANOES + ERUPTIONS
    pages = [
        [paragraphs[(page + k) % len(paragraphs)] for k in range(PARAGRAPHS_PER_PAGE)]
        for page in range(LARGE_PAGES)
    ]
    return write_scanned_pdf(folder / "scanned-volcanoes-10-pages.pdf", pages, latin_font())


def timed_load(path: Path, repeats: int) -> dict[str, Any]:
    """The loader's time on `path` (the best of `repeats`), per page, and what it read."""
    pages = len(PdfReader(path).pages)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        document = load_document(path)
        times.append(time.perf_counter() - start)
    best = min(times)
    return {
        "file": path.name,
        "pages": pages,
        "bytes": path.stat().st_size,
        "seconds": round(best, 3),
        "seconds_per_page": round(best / pages, 3),
        "characters_read": len(document.text),
    }


def tesseract_version() -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        return ""
    shown = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return (shown.stdout or shown.stderr).splitlines()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="loads of each file; the best is kept")
    args = parser.parse_args()
    ocr = find_ocr()
    if ocr is None:
        raise SystemExit(f"tesseract is not installed: apt install {OCR_PACKAGES}")
    with tempfile.TemporaryDirectory(prefix="footnote-bench-") as scratch:
        corpus = Path(scratch) / "scans"
        corpus.mkdir()
        for fixture in sorted(FIXTURES.glob("scanned-*.pdf")):
            shutil.copy(fixture, corpus / fixture.name)
        large_scan(corpus)
        files = [timed_load(path, args.repeats) for path in sorted(corpus.glob("*.pdf"))]
        defaults = Settings()
        app = create_app(Settings(home=Path(scratch) / "home", model_dir=defaults.model_cache))
        app.embedder  # noqa: B018 - loaded before the clock starts
        start = time.perf_counter()
        report = app.ingest([corpus])
        ingest_seconds = time.perf_counter() - start
        app.close()

    pages = sum(entry["pages"] for entry in files)
    load_seconds = sum(entry["seconds"] for entry in files)
    result: dict[str, Any] = {
        "benchmark": "ingest_ocr",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "tesseract": tesseract_version(),
        "languages": ocr.languages,
        "repeats": args.repeats,
        "files": files,
        "pages": pages,
        "seconds_per_page": round(load_seconds / pages, 3),
        "ingest": {
            "seconds": round(ingest_seconds, 2),
            "seconds_per_page": round(ingest_seconds / pages, 3),
            "chunks": report.chunks_embedded,
            "failed": len(report.failed),
        },
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    saved = RESULTS / f"ingest_ocr-{stamp}.json"
    saved.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {saved}")


if __name__ == "__main__":
    main()
