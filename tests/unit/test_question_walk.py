"""scripts/question_walk.py counts the files a run enters and the calls back into them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "question_walk.py"


def _walk_module() -> Any:
    spec = importlib.util.spec_from_file_location("question_walk", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_walk_counts_files_entered_and_calls_back_into_them() -> None:
    from footnote.answer.terms import content_terms
    from footnote.core.cjk import count_words

    def run() -> None:
        count_words("one two")  # core/cjk.py entered
        content_terms("Bees dance")  # answer/terms.py entered (it may call into others)
        count_words("three")  # back into core/cjk.py

    walk = _walk_module().Walk()
    walked = walk.measure(run)
    walk.close()

    assert walked["visited"][:2] == ["footnote/core/cjk.py", "footnote/answer/terms.py"]
    assert walked["files"] == len(walked["visited"])
    assert walked["returns"] >= 1 and walked["return_edges"] >= 1


def test_a_run_that_calls_nothing_of_footnote_walks_nowhere() -> None:
    walk = _walk_module().Walk()
    walked = walk.measure(lambda: sorted([3, 1, 2]))
    walk.close()

    assert walked == {"files": 0, "returns": 0, "return_edges": 0, "visited": []}
