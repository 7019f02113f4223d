"""Turn files into `Document`s: one `Loader` per file format, chosen by suffix.

`load_document(path, options)` is the entry point. Each loader declares the suffixes it
handles and the format of the documents it makes; the registry below maps
lower-cased suffixes to loader instances, and registering a loader registers its
formats in `footnote.core.formats`, the one list of formats shown to users
(`document_formats()`, imported from here, holds every built-in loader's). The built-in
loaders are found, not listed: every `Loader` subclass defined in a module of this package
is registered when the package is imported, so a new format is one new module here.
`LoadOptions` carries what the settings say about reading files (OCR of scanned PDF
pages); a loader that reads them is handed a copy set up for them by `with_options`.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from footnote.core.document import Document
from footnote.core.formats import document_formats, register_format
from footnote.core.modules import package_modules
from footnote.errors import UnsupportedFormatError

OcrMode = Literal["auto", "off"]


@dataclass(frozen=True)
class LoadOptions:
    """How files are read, from the settings (`FOOTNOTE_OCR`)."""

    # auto: PDF pages without a text layer are read by tesseract where it is installed.
    ocr: OcrMode = "auto"


class Loader(ABC):
    """Reads one kind of file into a `Document` whose block spans match its text."""

    suffixes: ClassVar[tuple[str, ...]] = ()
    format: ClassVar[str] = ""
    # Where its suffixes and formats come in the lists users see (the refusal of an unsupported
    # file, `footnote search --format`): the most common formats first, a new one last.
    listed_order: ClassVar[int] = 1000

    @abstractmethod
    def load(self, path: Path) -> Document:
        """Read `path`; raise `LoaderError` with a fix when the file cannot be used."""

    @property
    def formats_made(self) -> tuple[str, ...]:
        """The formats of the documents it makes: what `footnote search --format` selects."""
        return (self.format,)

    def unsupported(self, path: Path) -> str | None:
        """Why this loader cannot take `path` despite its suffix (None: it can)."""
        return None

    def with_options(self, options: LoadOptions) -> Loader:
        """This loader set up for `options`; one that reads none of them is itself."""
        return self


_LOADERS: dict[str, Loader] = {}


def register_loader(loader: Loader) -> None:
    """Make `loader` handle its suffixes, replacing any loader registered for them before,
    and make the formats of its documents known to search filters."""
    for suffix in loader.suffixes:
        _LOADERS[suffix.lower()] = loader
    for name in loader.formats_made:
        register_format(name)


def loader_for(path: Path) -> Loader:
    """The loader for `path`'s suffix, or `UnsupportedFormatError` naming the supported ones."""
    suffix = path.suffix.lower()
    loader = _LOADERS.get(suffix)
    if loader is None:
        supported = ", ".join(_LOADERS)
        what = f"file type '{suffix}'" if suffix else "file without an extension"
        raise UnsupportedFormatError(path, f"unsupported {what}; supported: {supported}")
    return loader


def unsupported_reason(path: Path) -> str | None:
    """Why `path` cannot be ingested by its name alone, or None when a loader takes it."""
    try:
        loader = loader_for(path)
    except UnsupportedFormatError as exc:
        return exc.problem
    return loader.unsupported(path)


def load_document(path: Path, options: LoadOptions = LoadOptions()) -> Document:
    """Load any supported file into a `Document`."""
    return loader_for(path).with_options(options).load(path)


def built_in_loaders() -> list[type[Loader]]:
    """Every concrete `Loader` subclass defined in a module of this package, in `listed_order`
    (then by module name): the loaders footnote ships."""
    found: list[type[Loader]] = []
    for module in package_modules(__name__, __path__):
        for _, member in inspect.getmembers(module, inspect.isclass):
            defined_here = member.__module__ == module.__name__
            if defined_here and issubclass(member, Loader) and not inspect.isabstract(member):
                found.append(member)
    return sorted(found, key=lambda loader: (loader.listed_order, loader.__module__))


for _loader in built_in_loaders():
    register_loader(_loader())

SUPPORTED_SUFFIXES: tuple[str, ...] = tuple(_LOADERS)

__all__ = [
    "SUPPORTED_SUFFIXES",
    "LoadOptions",
    "Loader",
    "OcrMode",
    "built_in_loaders",
    "document_formats",
    "load_document",
    "loader_for",
    "register_loader",
]
