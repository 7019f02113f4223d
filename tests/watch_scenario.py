"""The edit, add and delete steps that a watched folder's search results must follow."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def eventually(condition: Callable[[], bool], seconds: float, poll: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return condition()


def edit_add_and_delete(
    folder: Path,
    texts_found: Callable[[str], str],
    names_found: Callable[[str], set[str]],
    seconds: float,
    poll: float,
) -> None:
    """Edit herons.md, add sub/puffins.md and delete wrens.txt, each followed by search."""
    assert "shallow water" in texts_found("herons shallow water")

    (folder / "herons.md").write_text("# Herons\n\nHerons nest together in tall trees.\n", encoding="utf-8")
    assert eventually(lambda: "tall trees" in texts_found("herons nest tall trees"), seconds, poll)
    assert "shallow" not in texts_found("herons shallow water")

    (folder / "sub").mkdir()
    (folder / "sub" / "puffins.md").write_text("# Puffins\n\nPuffins dive for sand eels.\n", encoding="utf-8")
    assert eventually(lambda: "sand eels" in texts_found("puffins sand eels"), seconds, poll)

    (folder / "wrens.txt").unlink()
    assert eventually(lambda: "wrens.txt" not in names_found("wrens sing loudly"), seconds, poll)
    assert "sing loudly" not in texts_found("wrens sing loudly")
