"""`footnote search --explain` and its filter options, as a separate process with the real models."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.test_cli import as_json, footnote
from tests.store_modes import lasting_stores


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("search-home")
    lasting_stores(home)
    summary = as_json(footnote(home, "ingest", str(REPO / "examples" / "sample"), "--json"))["summary"]
    assert summary["new"] == 4 and summary["failed"] == 0
    return home


def test_explain_json_gives_each_retrievers_rank_and_score_and_the_fused_score(home: Path) -> None:
    hits = as_json(footnote(home, "search", "waggle dance of honeybees", "--explain", "--json", "-n", "8"))

    assert hits and Path(hits[0]["path"]).name == "honeybees.txt"
    for hit in hits:
        explain = hit["explain"]
        assert explain["keyword"] == {"rank": hit["keyword_rank"], "score": hit["keyword_score"]}
        assert explain["dense"] == {"rank": hit["dense_rank"], "score": hit["dense_score"]}
        ranks = [r for r in (explain["keyword"]["rank"], explain["dense"]["rank"]) if r is not None]
        assert ranks, "every hit was found by at least one retriever"
        # Default RRF: k = 60, both weights 1.
        assert explain["fused"] == pytest.approx(sum(1 / (60 + rank) for rank in ranks))
        assert explain["rerank"] is None
    assert any(h["keyword_rank"] is not None and h["dense_rank"] is not None for h in hits)
    fused = [h["explain"]["fused"] for h in hits]
    assert fused == sorted(fused, reverse=True)


def test_explain_prints_a_table(home: Path) -> None:
    result = footnote(home, "search", "waggle dance", "--explain", "-n", "3")

    assert result.returncode == 0, result.stderr
    for column in ("keyword rank", "keyword score", "dense rank", "dense score", "fused"):
        assert column in result.stdout
    assert "honeybees.txt" in result.stdout


def test_filter_options_reach_both_retrievers(home: Path) -> None:
    def names(*options: str) -> set[str]:
        hits = as_json(footnote(home, "search", "lens light tides lava bees", "--json", "-n", "50", *options))
        return {Path(hit["path"]).name for hit in hits}

    everything = names()
    assert everything == {"honeybees.txt", "lighthouses.md", "tides.html", "volcanoes.pdf"}
    assert names("--exclude", "*honeybees*", "--exclude", "*.html") == {"lighthouses.md", "volcanoes.pdf"}
    markdown_or_pdf = ("--format", "markdown", "--format", "pdf")
    assert names("--include", "*/sample/*.md", *markdown_or_pdf) == {"lighthouses.md"}
    assert names("--format", "pdf", "--before", "2100-01-01") == {"volcanoes.pdf"}
    assert names("--after", "2100-01-01T00:00:00+00:00") == set()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--after", "last tuesday"), "is not an ISO date"),
        (("--after", "2024-02-01", "--before", "2024-01-01"), "is not before --before"),
        (("--format", "xlsx"), "unknown format 'xlsx'"),
    ],
)
def test_bad_filter_options_are_one_clear_line(home: Path, options: tuple[str, ...], message: str) -> None:
    result = footnote(home, "search", "tides", *options)

    assert result.returncode == 2
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
