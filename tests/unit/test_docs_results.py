"""Every result file that README.md and docs/*.md cite for a figure exists in benchmarks/results/,
every file kept there is cited by docs/benchmarks.md, and together they stay within `RESULTS_BYTES`.

A citation is a code span naming a `.json.xz`, `.json`, `.png` or `.svg` file: a path under
`benchmarks/results/`, a bare file name with a `-` in it (result files are named
`<benchmark>-<label>-<stamp>`; a client's `mcp.json` is not one), `…/NAME` (the same folder), a glob
(`shared_stores-*.json.xz`, which must match a file), or the shorthand `…-SUFFIX`, which
shares its beginning with the file cited before it and must end exactly one file's name.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_LINK_TARGET = re.compile(r"\]\(([^)\s]*benchmarks/results/[^)\s]+)\)")
_RESULT_EXTENSIONS = (".json.xz", ".json", ".png", ".svg")
# Result files are kept compressed (`xz -9e NAME.json`, cited as `NAME.json.xz`): 5 MB holds the
# figures the docs give, with every question of each run behind them.
RESULTS_BYTES = 5_000_000
_FILE_NAME = re.compile(r"[\w.+*-]+")


def cited_results(text: str) -> Iterator[str]:
    """The result files `text` cites, as names in benchmarks/results/ (`…-` shorthands and globs kept)."""
    spans = _CODE_SPAN.findall(text) + [
        "benchmarks/results/" + target.split("benchmarks/results/", 1)[1]
        for target in _LINK_TARGET.findall(text)
    ]
    for span in spans:
        name = span.strip()
        if not name.endswith(_RESULT_EXTENSIONS):
            continue
        if name.startswith("benchmarks/results/"):
            yield name.removeprefix("benchmarks/results/")
        elif name.startswith("…/"):
            yield name.removeprefix("…/")
        elif name.startswith("…") or ("/" not in name and "-" in name and _FILE_NAME.fullmatch(name)):
            yield name


def matching(name: str, files: list[str]) -> list[str]:
    """The files a citation names: the one a `…` shorthand ends (none if several do), those a
    glob matches, or the file of that name."""
    if name.startswith("…"):
        ending = [file for file in files if file.endswith(name.removeprefix("…"))]
        return ending if len(ending) == 1 else []
    if "*" in name:
        return [file for file in files if fnmatch.fnmatchcase(file, name)]
    return [name] if name in files else []


def resolves(name: str, files: list[str]) -> bool:
    return bool(matching(name, files))


def test_citations_are_found_in_every_written_form() -> None:
    text = (
        "`benchmarks/results/a-1.json` and `b-2.json` (chart `benchmarks/results/b-2.png`), "
        "`…-3.json`, `…/c-4.json`, `benchmarks/results/d-*.json`, [e](../benchmarks/results/e.svg); "
        "not `/openapi.json`, `<label>.json`, `models/reader/reader.json`, `footnote.toml`, `.mcp.json`"
    )
    assert list(cited_results(text)) == [
        "a-1.json",
        "b-2.json",
        "b-2.png",
        "…-3.json",
        "c-4.json",
        "d-*.json",
        "e.svg",
    ]


def test_a_shorthand_must_end_exactly_one_file_name() -> None:
    files = ["scifact-overlap0-1.json", "scifact-overlap20-1.json", "zh-overlap0-1.json"]
    assert resolves("…-overlap20-1.json", files)
    assert not resolves("…-overlap0-1.json", files)  # two files end so: ambiguous
    assert not resolves("…-overlap40-1.json", files)


def test_the_docs_cite_their_figures() -> None:
    cited = [name for doc in DOCS for name in cited_results(doc.read_text(encoding="utf-8"))]
    assert len(set(cited)) > 50
    assert any(name.startswith("…") for name in cited)


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(REPO).as_posix())
def test_every_cited_result_file_exists(doc: Path) -> None:
    files = sorted(path.name for path in RESULTS.iterdir())
    missing = [name for name in cited_results(doc.read_text(encoding="utf-8")) if not resolves(name, files)]
    assert not missing, f"{doc.relative_to(REPO)} cites result files not in benchmarks/results/: {missing}"


def cited_by(text: str, files: list[str]) -> set[str]:
    """The files of `files` that `text` cites, by name, by a `…-` shorthand or by a glob."""
    return {file for name in cited_results(text) for file in matching(name, files)}


def test_a_file_is_cited_by_name_shorthand_or_glob() -> None:
    files = ["a-1.json.xz", "a-2.json.xz", "b-overlap0-1.json.xz", "c-3.png"]
    text = "`a-1.json.xz`, `…-overlap0-1.json.xz`, `benchmarks/results/c-*.png`, not `d-4.json.xz`"
    assert cited_by(text, files) == {"a-1.json.xz", "b-overlap0-1.json.xz", "c-3.png"}


def test_every_kept_result_file_is_cited_by_the_benchmarks_page() -> None:
    files = sorted(path.name for path in RESULTS.iterdir())
    cited = cited_by((REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8"), files)
    uncited = [file for file in files if file not in cited]
    assert not uncited, (
        f"benchmarks/results/ keeps files that docs/benchmarks.md does not cite: {uncited}; "
        "cite each beside the figure it gives, or delete it (git keeps history)"
    )


def test_the_kept_result_files_fit_their_budget() -> None:
    sizes = {path.name: path.stat().st_size for path in RESULTS.iterdir()}
    plain = sorted(name for name in sizes if name.endswith(".json"))
    assert sum(sizes.values()) <= RESULTS_BYTES, (
        f"benchmarks/results/ holds {sum(sizes.values()):,} bytes, over {RESULTS_BYTES:,}: xz -9e "
        f"the plain JSON ({plain[:5]}…) and cite NAME.json.xz, or retire figures the docs no longer need"
    )
