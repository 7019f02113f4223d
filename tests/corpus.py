"""Builders for test input files that are easier to generate than to keep as fixtures."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos

# Fixed metadata makes the same input produce byte-identical PDFs.
_CREATION_DATE = datetime(2024, 1, 1, tzinfo=UTC)
_FILE_ID = "<00000000000000000000000000000000><00000000000000000000000000000000>"


def write_sample_pdf(
    path: Path,
    pages: list[list[str]],
    title: str | None = None,
    *,
    sections: list[str | None] | None = None,
    user_password: str | None = None,
) -> Path:
    """Write a PDF with one page per item of `pages`, each a list of paragraphs.

    Text must be latin-1: it is set in the core Helvetica font. `sections[i]`, when
    given, is printed as a heading at the top of page i and added to the outline.
    `user_password` encrypts the file so that it cannot be opened without it.
    """
    pdf = FPDF()
    pdf.set_creation_date(_CREATION_DATE)
    pdf.file_id = lambda: _FILE_ID  # type: ignore[method-assign]
    if title is not None:
        pdf.set_title(title)
    if user_password is not None:
        pdf.set_encryption(owner_password=f"owner-{user_password}", user_password=user_password)
    for index, paragraphs in enumerate(pages):
        pdf.add_page()
        section = sections[index] if sections and index < len(sections) else None
        if section:
            pdf.start_section(section)
            pdf.set_font("Helvetica", style="B", size=14)
            pdf.multi_cell(0, 8, section, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(2)
        pdf.set_font("Helvetica", size=11)
        for paragraph in paragraphs:
            pdf.multi_cell(0, 6, paragraph, align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(3)
    pdf.output(str(path))
    return path
