"""Which files an ingest run takes: folders walked, globs applied, hidden and unsupported files
left out with the reason."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from footnote.ingest.loaders import unsupported_reason
from footnote.ingest.report import FileOutcome


def discover(
    paths: Iterable[Path], include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> tuple[list[Path], list[FileOutcome]]:
    """Files to ingest under `paths` (folders recursively), and outcomes for paths left out.

    `include`/`exclude` are globs matched against a file's path relative to the folder
    given and against its name (`*` also matches across folders); a file is taken when it
    matches some include (or there are none) and no exclude. Files of unsupported types
    found in folders are skipped with the reason; unsupported files named on their own
    and paths that do not exist fail.
    """
    found: list[tuple[Path, bool]] = []  # (file, named explicitly)
    outcomes: list[FileOutcome] = []
    for path in paths:
        if path.is_dir():
            for file, relative in _walk(path, exclude):
                if select_path(relative, include, exclude):
                    found.append((file, False))
        elif path.is_file() or path.is_symlink():
            found.append((path, True))
        else:
            outcomes.append(FileOutcome(str(path), "failed", error="no such file or folder; check the path"))
    unique: dict[Path, None] = {}
    for file, named in found:
        reason = unsupported_reason(file)
        if reason is not None:
            # A file named on its own was meant to be ingested: refusing it is a failure.
            outcomes.append(FileOutcome(str(file), "failed" if named else "skipped", error=reason))
        else:
            unique.setdefault(absolute(file))
    return list(unique), outcomes


def absolute(path: Path) -> Path:
    """The path resolved, the key a document is stored under."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: keep the path; reading it reports the loop
        return path.absolute()


def select_path(relative: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a file at `relative` (POSIX path under its folder) passes the globs and is not hidden."""
    if any(part.startswith(".") for part in relative.split("/")):
        return False
    name = relative.rsplit("/", 1)[-1]

    def matches(patterns: Sequence[str]) -> bool:
        return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)

    return (not include or matches(include)) and not matches(exclude)


def _walk(folder: Path, exclude: Sequence[str] = ()) -> Iterator[tuple[Path, str]]:
    # followlinks=False: a symlink loop can never make the walk endless.
    for root, dirs, files in os.walk(folder, followlinks=False):
        base = Path(root).relative_to(folder).as_posix()
        prefix = "" if base == "." else f"{base}/"
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and not any(fnmatch.fnmatch(f"{prefix}{d}", p) or fnmatch.fnmatch(d, p) for p in exclude)
        )
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root) / name, f"{prefix}{name}"
