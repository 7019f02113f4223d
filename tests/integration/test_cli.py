"""The `footnote` command end to end, as a separate process with real models and stores."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.corpus import write_sample_pdf
from tests.store_modes import lasting_stores, stores_of

_ASKING = frozenset("which where whose about there their these those would could should".split())


def footnote(home: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **stores_of(home), "FOOTNOTE_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "footnote", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("sample-home")
    lasting_stores(home)
    result = footnote(home, "ingest", str(REPO / "examples" / "sample"), "--json")
    summary = as_json(result)["summary"]
    assert summary["new"] == 4 and summary["failed"] == 0
    return home


def test_ask_json_cites_passages_verbatim(sample_home: Path) -> None:
    answer = as_json(footnote(sample_home, "ask", "Who invented the Fresnel lens?", "--json"))
    assert answer["citations"], f"no citation in {answer['answer']!r}"
    sources = {source["number"]: source for source in answer["sources"]}
    for citation in answer["citations"]:
        source = sources[citation["number"]]
        assert citation["quote"] in source["text"]
        assert citation["chunk_id"] == source["chunk_id"]
        offset = citation["start"] - source["start"]
        assert source["text"][offset : offset + len(citation["quote"])] == citation["quote"]
    assert "Fresnel" in answer["answer"]
    cited = [s for s in answer["sentences"] if s["citations"]]
    assert all(f"[{n}]" in answer["answer"] for s in cited for n in s["citations"])


def test_ask_streams_sentences_then_sources(sample_home: Path) -> None:
    result = footnote(sample_home, "ask", "Where are the highest tides in the world?")
    assert result.returncode == 0, result.stderr
    assert "Sources" in result.stdout
    assert "tides.html" in result.stdout


def test_ask_related_suggests_questions_the_sources_ground(sample_home: Path) -> None:
    question = "Who invented the Fresnel lens?"
    answer = as_json(footnote(sample_home, "ask", question, "--related", "--json"))
    related = answer["related_questions"]
    assert 1 <= len(related) <= 5, f"no usable follow-up for {answer['answer']!r}"
    sources = " ".join(source["text"] for source in answer["sources"]).lower()
    for suggestion in related:
        assert suggestion.endswith("?") and suggestion != question
        # Checked apart from the filter's own stemmer: every longer word's first five letters
        # occur in the sources shown with the answer.
        words = [w for w in re.findall(r"[a-z]+", suggestion.lower()) if len(w) >= 5 and w not in _ASKING]
        missing = [w for w in words if w[:5] not in sources]
        assert not missing, f"{suggestion!r} uses {missing}, absent from the sources"
    assert len({s.lower() for s in related}) == len(related)


def test_search_json_and_docs_list(sample_home: Path) -> None:
    hits = as_json(footnote(sample_home, "search", "waggle dance", "--json", "-n", "3"))
    assert hits and hits[0]["path"].endswith("honeybees.txt")
    documents = as_json(footnote(sample_home, "docs", "list", "--json"))
    assert sorted(Path(d["path"]).name for d in documents) == [
        "honeybees.txt",
        "lighthouses.md",
        "tides.html",
        "volcanoes.pdf",
    ]


def test_bad_files_get_one_line_each_and_the_rest_is_ingested(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe kettle whistles when the water boils.\n")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 8)
    valid = write_sample_pdf(tmp_path / "valid.pdf", [["A page of text about kettles."]])
    (folder / "corrupt.pdf").write_bytes(valid.read_bytes()[:300])
    missing = tmp_path / "does-not-exist.md"
    result = footnote(tmp_path / "home", "ingest", str(folder), str(missing))
    assert result.returncode == 1, result.stdout + result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 4, result.stderr
    for name in ("empty.txt", "binary.txt", "corrupt.pdf", "does-not-exist.md"):
        assert sum(name in line for line in error_lines) == 1, f"{name}: {result.stderr}"
    documents = as_json(footnote(tmp_path / "home", "docs", "list", "--json"))
    assert [Path(d["path"]).name for d in documents] == ["good.md"]


def test_bad_settings_and_empty_questions_get_a_clear_error(tmp_path: Path) -> None:
    result = footnote(tmp_path / "home", "search", "   ")
    assert result.returncode == 2 and "query is empty" in result.stderr
    env_result = subprocess.run(
        [sys.executable, "-m", "footnote", "docs", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "FOOTNOTE_HOME": str(tmp_path / "home"), "FOOTNOTE_TOP_K": "zero"},
        check=False,
    )
    assert env_result.returncode == 2 and "FOOTNOTE_TOP_K" in env_result.stderr


def test_models_list_and_verify(tmp_path: Path) -> None:
    models = {m["name"]: m for m in as_json(footnote(tmp_path, "models", "list", "--json"))}
    assert models["smollm2-135m"]["installed"] and models["minilm-l6"]["installed"]
    verified = as_json(footnote(tmp_path, "models", "verify", "--json"))
    assert all(result["ok"] for result in verified)


def test_readme_demo_command_prints_a_cited_answer(tmp_path: Path) -> None:
    result = subprocess.run(
        ["make", "-s", "demo", f"DEMO_HOME={tmp_path / 'demo-home'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    answer, _, sources = result.stdout.partition("Sources")
    assert "[1]" in answer or "[2]" in answer, result.stdout
    assert "lighthouses.md" in sources
    assert '"' in sources  # the supporting quote is printed


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _read_until_prompt(terminal: int, process: subprocess.Popen[bytes], timeout: float = 300) -> str:
    """What the program wrote to the terminal up to its next "> " prompt."""
    seen = b""
    deadline = time.monotonic() + timeout
    watch = select.poll()  # not select(), which refuses descriptors above 1023
    watch.register(terminal, select.POLLIN)
    while time.monotonic() < deadline:
        if watch.poll(1000):
            try:
                seen += os.read(terminal, 65536)
            except OSError:  # the program closed the terminal
                break
            text = _ANSI.sub("", seen.decode("utf-8", errors="replace")).replace("\r\n", "\n")
            if text.endswith("\n> "):
                return text
        elif process.poll() is not None:
            break
    raise AssertionError(
        f"no prompt within {timeout} s; the terminal shows:\n{seen.decode(errors='replace')}"
    )


def test_chat_in_a_terminal_answers_three_questions_with_one_model_load(sample_home: Path) -> None:
    terminal, program_side = pty.openpty()
    env = {**os.environ, **stores_of(sample_home), "FOOTNOTE_HOME": str(sample_home), "COLUMNS": "200"}
    env["FOOTNOTE_LOG_LEVEL"] = "info"
    process = subprocess.Popen(
        [sys.executable, "-m", "footnote", "chat"],
        stdin=program_side,
        stdout=program_side,
        stderr=program_side,  # input() writes its prompt there; the log goes there too
        env=env,
    )
    os.close(program_side)
    questions = [
        "Who invented the Fresnel lens?",
        "In what year did he invent it?",
        "Who decoded the waggle dance of honeybees?",
    ]
    try:
        transcript = [_read_until_prompt(terminal, process)]
        answers = []
        for question in questions:
            os.write(terminal, question.encode() + b"\n")
            answers.append(_read_until_prompt(terminal, process))
        transcript += answers
        os.write(terminal, b"\n")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(terminal)
    log = "".join(transcript)
    assert log.count("loaded the answer model") == 1, log
    assert "Fresnel" in answers[0] and "[1]" in answers[0]
    assert "1822" in answers[1], answers[1]
    assert "Frisch" in answers[2], answers[2]
