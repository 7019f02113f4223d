"""The shape model's made training questions: lists from a document's own headings."""

from __future__ import annotations

from pathlib import Path

from footnote.training.shape import LISTS_PER_DOCUMENT, made_lists


def test_list_questions_are_made_from_headings_that_name_several_things(tmp_path: Path) -> None:
    (tmp_path / "tool.md").write_text(
        "# Tool\n\n## Compression options\n\nText.\n\n## Exit status\n\nText.\n\n"
        "## 2.1 Legacy hash functions\n\nText.\n\n## Synopsis\n\nText.\n\n## Access\n\nText.\n",
        encoding="utf-8",
    )
    made = made_lists(tmp_path)
    subjects = sorted(q.question for q in made)
    assert len(made) == 2
    assert any("compression options" in q for q in subjects)
    assert any("legacy hash functions" in q for q in subjects)
    assert all(q.broad and q.group == "tool.md" and q.kind == "made-list-heading" for q in made)


def test_no_document_gives_more_than_its_share_of_list_questions(tmp_path: Path) -> None:
    headings = "".join(f"## Group {chr(97 + i)} options\n\nText.\n\n" for i in range(LISTS_PER_DOCUMENT + 4))
    (tmp_path / "many.md").write_text(f"# Many\n\n{headings}", encoding="utf-8")
    assert len(made_lists(tmp_path)) == LISTS_PER_DOCUMENT
