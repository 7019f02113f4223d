"""Regenerate tests/fixtures/scanned-*.pdf: PDFs of page images with no text layer, as a scanner makes.

Run from the repository root with the dev dependencies installed:

    .venv/bin/python scripts/make_scanned_pdf.py

Each page is the text rendered with Pillow into a greyscale image at 150 dpi and saved as
one JPEG image per page, so only OCR can read it. The English pages are set in DejaVu Sans
(shipped inside matplotlib); the Chinese page needs a font with CJK glyphs, found among
Debian's (`apt install fonts-wqy-microhei` or `fonts-noto-cjk`); the PDFs need no font to read.
The output is reproducible byte for byte with the same Pillow and fonts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import matplotlib
from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

DPI = 150
A4_INCHES = (8.27, 11.69)
MARGIN_INCHES = 1.0
FONT_POINTS = 12
LINE_SPACING = 1.5
PARAGRAPH_SPACING = 0.8  # of a line, added after each paragraph
JPEG_QUALITY = 85

# The answer to "When was the Bell Rock Lighthouse completed?" is on page 2 only.
ENGLISH_PAGES = [
    [
        "The Bell Rock Lighthouse stands on a reef eleven miles off the east coast of Scotland, "
        "in the mouth of the Firth of Tay.",
        "The reef is covered by the sea at high tide, so the masons could only work for a few "
        "hours at low water, and many ships were wrecked on it before the tower was built.",
    ],
    [
        "Robert Stevenson completed the Bell Rock Lighthouse in 1810 after four summers of work on the reef.",
        "Its light was first shown in February 1811, and it is the oldest surviving sea-washed "
        "lighthouse in the world.",
    ],
]

# The Great Wall: "the Ming wall runs from Jiayu Pass in the west to the Yalu River in the east".
CHINESE_PAGES = [
    [
        "长城是中国古代修建的军事防御工程。",
        "明长城西起嘉峪关，东至鸭绿江，全长约八千八百公里。",
    ]
]

CJK_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
)


def latin_font() -> Path:
    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def cjk_font() -> Path:
    """A font with Chinese glyphs: Debian's WenQuanYi or Noto CJK, or any fontconfig finds."""
    for candidate in CJK_FONTS:
        if Path(candidate).is_file():
            return Path(candidate)
    if shutil.which("fc-match"):
        found = subprocess.run(
            ["fc-match", "-f", "%{file}", ":lang=zh-cn"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if found and Path(found).is_file():
            return Path(found)
    raise SystemExit("no font with Chinese glyphs: apt install fonts-wqy-microhei (or fonts-noto-cjk)")


def wrapped(paragraph: str, font: ImageFont.FreeTypeFont, width: float) -> list[str]:
    """The paragraph cut into lines no wider than `width`: between words, or between
    characters for text written without spaces."""
    pieces = paragraph.split(" ") if " " in paragraph else list(paragraph)
    joiner = " " if " " in paragraph else ""
    lines: list[str] = []
    line = ""
    for piece in pieces:
        candidate = f"{line}{joiner}{piece}" if line else piece
        if line and font.getlength(candidate) > width:
            lines.append(line)
            line = piece
        else:
            line = candidate
    return [*lines, line] if line else lines


def page_image(paragraphs: list[str], font_path: Path, dpi: int = DPI) -> Image.Image:
    """One printed page: the paragraphs in black on white, greyscale, at `dpi`."""
    width, height = (round(inches * dpi) for inches in A4_INCHES)
    margin = round(MARGIN_INCHES * dpi)
    font = ImageFont.truetype(str(font_path), round(FONT_POINTS * dpi / 72))
    line_height = round(FONT_POINTS * dpi / 72 * LINE_SPACING)
    image = Image.new("L", (width, height), color=255)
    draw = ImageDraw.Draw(image)
    y = margin
    for paragraph in paragraphs:
        for line in wrapped(paragraph, font, width - 2 * margin):
            if y + line_height > height - margin:
                raise ValueError(f"the text does not fit on one page; it stops at {line!r}")
            draw.text((margin, y), line, font=font, fill=0)
            y += line_height
        y += round(line_height * PARAGRAPH_SPACING)
    return image


def write_scanned_pdf(path: Path, pages: list[list[str]], font_path: Path, dpi: int = DPI) -> Path:
    """A PDF of one greyscale page image per item of `pages` (each a list of paragraphs),
    with no text layer."""
    images = [page_image(paragraphs, font_path, dpi) for paragraphs in pages]
    images[0].save(
        path,
        "PDF",
        save_all=True,
        append_images=images[1:],
        resolution=dpi,
        quality=JPEG_QUALITY,
        creationDate=None,
        modDate=None,
    )
    return path


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    outputs = [
        write_scanned_pdf(FIXTURES / "scanned-bell-rock.pdf", ENGLISH_PAGES, latin_font()),
        write_scanned_pdf(FIXTURES / "scanned-great-wall-zh.pdf", CHINESE_PAGES, cjk_font()),
    ]
    for output in outputs:
        print(f"wrote {output.relative_to(ROOT)} ({output.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
