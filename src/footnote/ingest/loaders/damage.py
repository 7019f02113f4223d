"""Telling a damaged file from a bug in footnote: which code raised an exception.

Parser libraries raise many exception types on malformed input (pypdf: ValueError, KeyError,
struct and zlib errors besides its own PyPdfError; python-docx: zipfile, lxml and KeyError),
so a loader cannot tell a damaged file by the exception's type. It can tell by where it was
raised: the innermost frame of the traceback that is either the library's or the caller's
(footnote's own, or a source file that is neither the standard library's nor an installed
package's).
Only the library's means "this file is damaged"; the caller's (even when the library called
it back, as pypdf calls a text visitor) is a bug, and is left to surface as itself. Frames of
the standard library and of other packages (zipfile; lxml, whose compiled frames name no file
on disk) count for neither side: they run for whoever called them.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

import footnote

_OWN = os.path.dirname(os.path.abspath(footnote.__file__)) + os.sep
_INSTALLED = tuple(
    {
        os.path.abspath(sysconfig.get_path(name)) + os.sep
        for name in ("stdlib", "platstdlib", "purelib", "platlib")
    }
)


def raised_by(exc: BaseException, library: ModuleType) -> bool:
    """Whether `exc` came from `library` (a package) rather than from the code that called it."""
    library_dir = os.path.dirname(os.path.abspath(library.__file__ or "")) + os.sep
    culprit = ""
    frame = exc.__traceback__
    while frame is not None:
        filename = os.path.abspath(frame.tb_frame.f_code.co_filename)
        if filename.startswith(library_dir):
            culprit = "library"
        elif filename.startswith(_OWN) or _is_callers_source(filename):
            culprit = "caller"
        frame = frame.tb_next
    return culprit == "library"


@contextmanager
def damage_from(library: ModuleType, damaged: Callable[[Exception], Exception]) -> Iterator[None]:
    """Turn what `library` raises in the block into `damaged(exc)`; let anything else through."""
    try:
        yield
    except Exception as exc:
        if not raised_by(exc, library):
            raise
        raise damaged(exc) from exc


def _is_callers_source(filename: str) -> bool:
    return os.path.isfile(filename) and not filename.startswith(_INSTALLED)
