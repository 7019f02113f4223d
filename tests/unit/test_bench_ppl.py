"""`footnote bench ppl`'s pure parts: windows and groups, rounds, ratios, the table, the SVG chart,
and how footnote's scorer packs several windows into one llama.cpp batch."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from footnote.bench.ppl import (
    Contender,
    WindowSpec,
    check_transformers,
    run_rounds,
    table,
    window_groups,
    with_ratios,
)
from footnote.bench.ppl_chart import write_ppl_chart
from footnote.errors import ConfigError
from footnote.perplexity import ScoringOptions, Tokenizer, TokenScorer, score_string


def row(key: str, perplexity: float, tokens_per_second: float) -> dict[str, Any]:
    return {
        "key": key,
        "backend": f"{key} backend",
        "tokens_scored": 10,
        "perplexity": perplexity,
        "perplexity_stderr": 0.5,
        "tokens_per_second": tokens_per_second,
    }


def test_window_groups_cut_hugging_face_windows_and_group_them() -> None:
    groups = window_groups(list(range(10)), context=4, stride=4, per_group=2)
    assert groups == [[([0, 1, 2, 3], 1), ([4, 5, 6, 7], 1)], [([8, 9], 1)]]
    overlapping = window_groups(list(range(6)), context=4, stride=2, per_group=8)
    assert overlapping == [[([0, 1, 2, 3], 1), ([2, 3, 4, 5], 2)]]


def test_rounds_give_every_contender_every_group_and_rotate_who_goes_first() -> None:
    calls: list[tuple[str, int]] = []

    def recorder(name: str) -> Contender:
        def score(group: Sequence[WindowSpec]) -> list[list[float]]:
            calls.append((name, group[0][0][0]))
            return [[-1.0] * (len(ids) - first) for ids, first in group]

        return Contender(name, name, score)

    contenders = [recorder("a"), recorder("b"), recorder("c")]
    groups = window_groups(list(range(12)), context=4, stride=4, per_group=1)
    run_rounds(contenders, groups)
    assert calls == [("a", 0), ("b", 0), ("c", 0), ("b", 4), ("c", 4), ("a", 4), ("c", 8), ("a", 8), ("b", 8)]
    assert [len(c.logprobs) for c in contenders] == [9, 9, 9]
    assert contenders[0].row(12)["perplexity"] == pytest.approx(2.718281828, rel=1e-6)


def test_ratios_are_against_the_transformers_row_and_the_table_shows_them() -> None:
    report = with_ratios({"rows": [row("footnote", 30.3, 130.0), row("transformers", 30.0, 100.0)]})
    footnote = report["rows"][0]
    assert report["reference"] == "transformers"
    assert footnote["speedup_vs_transformers"] == 1.3
    assert footnote["perplexity_vs_transformers_percent"] == pytest.approx(1.0)
    header, rows = table(report)
    assert header[0] == "backend" and rows[0][4:] == ["+1.00%", "130.0", "1.30×"]
    alone = with_ratios({"rows": [row("footnote", 30.3, 130.0)]})
    assert alone["reference"] is None and table(alone)[1][0][4:] == ["", "130.0", ""]


def test_chart_is_an_svg_without_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    report = {"rows": [row("footnote", 30.3, 130.0), row("transformers", 30.0, 100.0)]}
    path = write_ppl_chart(report, tmp_path / "ppl", "a <title>")
    svg = path.read_text(encoding="utf-8")
    assert path.suffix == ".svg" and svg.startswith("<svg")
    assert "footnote backend" in svg and "PPL 30.3000" in svg and "a &lt;title&gt;" in svg


def test_missing_transformers_names_the_install_and_the_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "gguf" else real(name))
    with pytest.raises(ConfigError, match=r"need gguf.*pip install.*--skip transformers"):
        check_transformers()


class _Characters(Tokenizer):
    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]


class _Grouping(TokenScorer):
    """Scores a token -(id % 3) - 1 whatever its context, and records how windows came in."""

    def __init__(self, per_batch: int) -> None:
        self.tokenizer = _Characters()
        self.context_length = 16
        self.windows_per_batch = per_batch
        self.groups: list[int] = []

    def score_window(self, token_ids: Sequence[int], first_scored: int) -> list[float]:
        return [-1.0 - t % 3 for t in token_ids[first_scored:]]

    def score_windows(self, windows: Sequence[tuple[Sequence[int], int]]) -> list[list[float]]:
        self.groups.append(len(windows))
        return super().score_windows(windows)


def test_the_runner_hands_a_scorer_as_many_windows_as_it_takes_at_once() -> None:
    text = "abcdefghij" * 10
    options = ScoringOptions(context_length=16, stride=12)
    one, four = _Grouping(1), _Grouping(4)
    alone, grouped = score_string(one, text, options), score_string(four, text, options)
    assert alone.perplexity == grouped.perplexity and alone.windows == grouped.windows == 8
    assert one.groups == [1] * 8 and four.groups == [4, 4]


def test_a_llama_batch_holds_each_window_as_its_own_sequence_with_logits_only_where_scored() -> None:
    pytest.importorskip("llama_cpp")
    from footnote.perplexity.backends.llamacpp import _Batch, windows_per_decode

    batch = _Batch(16)
    try:
        # hf windows with no overlap: a window's first token is context only, its last predicts nothing
        rows = batch.load_many([([5, 6, 7, 8], 0, 3), ([9, 10, 11], 0, 2)])
        assert rows == 5 and batch.wanted_rows() == [0, 1, 2, 4, 5]
        assert batch.sequences() == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]
        batch.load([1, 2, 3, 4, 5], 2, 4)  # overlapping window: only its new tokens are scored
        assert batch.wanted_rows() == [2, 3] and {s for s, _ in batch.sequences()} == {0}
    finally:
        batch.free()
    assert windows_per_decode(512) == windows_per_decode(4096) == 1
    assert windows_per_decode(128) == 4 and windows_per_decode(100) == 5
