"""The text of scanned pages: Debian's tesseract reads a PDF page's images.

A page without a text layer is normally one image of the printed page. pypdf decodes a page's
embedded images (no renderer is needed), and tesseract reads each in order through pytesseract,
in English and simplified Chinese where their language data is installed. Tesseract puts spaces
between Chinese characters and breaks lines inside a sentence; both are taken out between two
CJK characters, so the text reads, and is searched, as it was printed.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import pypdf
from pypdf import PageObject

from footnote.core.cjk import CJK_CLASS
from footnote.ingest.loaders.damage import raised_by
from footnote.ingest.loaders.text import normalize_newlines

if TYPE_CHECKING:
    from PIL.Image import Image

log = logging.getLogger(__name__)

# What `apt install` needs for tesseract to read English and simplified Chinese.
OCR_PACKAGES = "tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim"
# Tesseract's names of the languages read, in the order given to it (the first leads).
OCR_LANGUAGES = ("eng", "chi_sim")
# Fullwidth forms and CJK punctuation sit between Chinese characters like the characters do.
_WIDE = f"{CJK_CLASS}\u3000-\u303f\uff00-\uffef"
_GAP_IN_CJK = re.compile(f"(?<=[{_WIDE}])(?:[ \t]+|[ \t]*\n[ \t]*)(?=[{_WIDE}])")
_POINTS_PER_INCH = 72
# A scan's resolution is told to tesseract (it assumes 70 dpi without it), within what it accepts.
_DPI_RANGE = (70, 2400)


class OcrError(Exception):
    """Tesseract failed: it exited with an error, or is gone."""


class _OneThreadEnvironment(Mapping[str, str]):
    """The process's environment as tesseract is started with it: one OpenMP thread unless
    OMP_THREAD_LIMIT says otherwise. Tesseract's OpenMP threads spin against the embedder and
    other work: on 2 busy cores a page took 4 to 10 s with them and 1.1 s without."""

    _LIMIT = "OMP_THREAD_LIMIT"

    def __getitem__(self, key: str) -> str:
        if key == self._LIMIT:
            return os.environ.get(key, "1")
        return os.environ[key]

    def __iter__(self) -> Iterator[str]:
        yield from os.environ
        if self._LIMIT not in os.environ:
            yield self._LIMIT

    def __len__(self) -> int:
        return len(os.environ) + (self._LIMIT not in os.environ)


@functools.cache
def _pytesseract() -> ModuleType:
    import pytesseract

    # pytesseract starts tesseract with this module-level environment.
    pytesseract.pytesseract.environ = _OneThreadEnvironment()
    return pytesseract


def tesseract_binary() -> str | None:
    """Where the `tesseract` command is, or None when it is not installed."""
    return shutil.which("tesseract")


@functools.lru_cache(maxsize=4)
def _installed_languages(binary: str) -> frozenset[str]:
    """The languages tesseract has data for; asked once for each place it is installed at."""
    pytesseract = _pytesseract()
    try:
        return frozenset(pytesseract.get_languages(config=""))
    except (pytesseract.TesseractError, pytesseract.TesseractNotFoundError) as exc:
        raise OcrError(str(exc)) from exc


def without_cjk_gaps(text: str) -> str:
    """`text` without the spaces and line breaks OCR leaves between two CJK characters."""
    return _GAP_IN_CJK.sub("", text)


def cleaned(raw: str) -> str:
    """Tesseract's output as page text: no form feed, no trailing spaces, at most one blank line."""
    lines = [line.rstrip() for line in normalize_newlines(raw.replace("\f", "\n")).split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return without_cjk_gaps(text)


@dataclass(frozen=True)
class Ocr:
    """Tesseract, found on this machine, reading the languages it has data for."""

    languages: str  # tesseract's -l argument, e.g. "eng+chi_sim"

    def page_text(self, page: PageObject) -> str:
        """The text of the page's images, read in order, one paragraph group after another."""
        texts = (self.image_text(image, _dpi(image, page)) for image in _decoded_images(page))
        return "\n\n".join(text for text in texts if text)

    def image_text(self, image: Image, dpi: int | None = None) -> str:
        pytesseract = _pytesseract()
        config = f"--dpi {dpi}" if dpi else ""
        if image.mode not in ("1", "L", "RGB"):
            image = image.convert("RGB")
        try:
            raw = pytesseract.image_to_string(image, lang=self.languages, config=config)
        except (pytesseract.TesseractError, pytesseract.TesseractNotFoundError) as exc:
            raise OcrError(" ".join(str(exc).split())[:200] or type(exc).__name__) from exc
        return cleaned(raw)


def find_ocr() -> Ocr | None:
    """Tesseract reading whichever of English and simplified Chinese it has data for; None
    without tesseract, or with neither."""
    binary = tesseract_binary()
    if binary is None:
        return None
    try:
        installed = _installed_languages(binary)
    except OcrError:
        return None  # a tesseract that cannot list its languages cannot read either
    languages = [language for language in OCR_LANGUAGES if language in installed]
    return Ocr("+".join(languages)) if languages else None


def _decoded_images(page: PageObject) -> Iterator[Image]:
    """The page's images as pictures; one pypdf or Pillow cannot decode is left out, logged."""
    import PIL

    for image_file in page.images:
        try:
            picture = image_file.image
        except Exception as exc:
            if not (raised_by(exc, pypdf) or raised_by(exc, PIL)):
                raise
            log.warning("an image of a scanned page could not be decoded (%s); its text is left out", exc)
            continue
        if picture is not None:
            yield picture


def _dpi(image: Image, page: PageObject) -> int | None:
    """The scan's resolution when the image spans the page's width, as a scanned page does."""
    width_inches = float(page.mediabox.width) / _POINTS_PER_INCH
    if width_inches <= 0:
        return None
    dpi = round(image.width / width_inches)
    low, high = _DPI_RANGE
    return dpi if low <= dpi <= high else None
