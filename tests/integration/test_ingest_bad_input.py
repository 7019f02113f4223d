"""Bad files each give one clear line, the run goes on, and nothing already indexed is lost.

Runs the real `footnote ingest` command in a child process (hashing embedder, real
SQLite and Chroma files) over a folder that mixes good files with broken ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from footnote.config import Settings
from footnote.store.catalog import open_catalog
from tests.conftest import REPO
from tests.corpus import write_sample_pdf

GOOD_MD = "# Kestrels\n\nKestrels hover over fields while hunting voles.\n"
PDF_PAGES = [["Owls hunt at night using their hearing."], ["Barn owls nest in old buildings."]]


def ingest(home: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FOOTNOTE_HOME": str(home),
        "COLUMNS": "400",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    command = [sys.executable, "-m", "tests.crash_child", "--", "ingest", str(folder)]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


def documents(home: Path) -> dict[str, tuple[int, str, int]]:
    catalog = open_catalog(Settings(home=home))  # the stores the ingest's environment named
    try:
        return {Path(d.path).name: (d.id, d.content_hash, d.chunk_count) for d in catalog.list_documents()}
    finally:
        catalog.close()


def test_bad_files_each_give_one_line_and_nothing_indexed_is_lost(tmp_path: Path) -> None:
    folder, home = tmp_path / "corpus", tmp_path / "home"
    folder.mkdir()
    (folder / "kestrels.md").write_text(GOOD_MD, encoding="utf-8")
    write_sample_pdf(folder / "owls.pdf", PDF_PAGES, title="Owls")
    first = ingest(home, folder)
    assert first.returncode == 0, first.stderr
    before = documents(home)
    assert set(before) == {"kestrels.md", "owls.pdf"}

    # The indexed PDF is truncated in place: the new bytes fail, the indexed version stays.
    pdf = (folder / "owls.pdf").read_bytes()
    (folder / "owls.pdf").write_bytes(pdf[: len(pdf) // 3])
    write_sample_pdf(folder / "corrupt.pdf", PDF_PAGES)
    (folder / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(2000))
    write_sample_pdf(folder / "locked.pdf", PDF_PAGES, user_password="secret")
    (folder / "nobody.html").write_text("<html><head><title>Empty</title></head></html>", encoding="utf-8")
    with (folder / "huge.txt").open("w", encoding="ascii") as out:
        out.write("lorem ipsum dolor sit amet " * (50 * 1024 * 1024 // 27))
    damaged = "Café crème, naïve façade: déjà vu.".encode() + b"\xff\xfe" + " Über alles.\n".encode()
    (folder / "damaged.txt").write_bytes(damaged)
    (folder / "empty.txt").write_bytes(b"")
    os.symlink("loop-b.txt", folder / "loop-a.txt")
    os.symlink("loop-a.txt", folder / "loop-b.txt")
    (folder / "late.md").write_text("# Swifts\n\nSwifts sleep on the wing.\n", encoding="utf-8")
    bad = [
        "owls.pdf",
        "corrupt.pdf",
        "locked.pdf",
        "nobody.html",
        "huge.txt",
        "empty.txt",
        "loop-a.txt",
        "loop-b.txt",
    ]
    if os.geteuid() != 0:  # root reads any file, so permissions cannot be tested as root
        (folder / "secret.txt").write_text("private notes\n", encoding="utf-8")
        (folder / "secret.txt").chmod(0)
        bad.append("secret.txt")

    second = ingest(home, folder)
    assert second.returncode == 1, second.stderr  # some files failed, the run itself did not
    lines = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    for name in bad:
        mine = [line for line in lines if f"{os.sep}{name}:" in line]
        assert len(mine) == 1, f"{name}: {mine}"
    assert len(lines) == len(bad)
    expected = {
        "owls.pdf": "truncated or corrupt",
        "corrupt.pdf": "truncated or corrupt",
        "locked.pdf": "password-protected",
        "nobody.html": "no visible text",
        "huge.txt": "split the file",
        "empty.txt": "empty",
        "loop-a.txt": "symbolic links",
        "secret.txt": "permissions",
    }
    for name, words in expected.items():
        if name in bad:
            assert any(f"{os.sep}{name}:" in line and words in line for line in lines), (name, lines)

    after = documents(home)
    assert after["kestrels.md"] == before["kestrels.md"]
    assert after["owls.pdf"] == before["owls.pdf"]  # the indexed version of the damaged file is kept
    assert {"damaged.txt", "late.md"} <= set(after)  # bad bytes are replaced, not refused
    catalog = open_catalog(Settings(home=home))
    try:
        text = catalog.document_text(after["damaged.txt"][0])
        assert text == "Café crème, naïve façade: déjà vu.\ufffd\ufffd Über alles.\n"
    finally:
        catalog.close()
