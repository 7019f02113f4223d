"""Gzip-compressed text and Markdown (`notes.md.gz`, `log.txt.gz`).

The file is decompressed in memory (up to `MAX_DECOMPRESSED_BYTES`, so a gzip
bomb cannot exhaust memory) and handed to the loader of the inner suffix;
`Document.text` is the decompressed text, so spans index it exactly as they
would index the uncompressed file.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path
from typing import ClassVar

from footnote.core.document import Document
from footnote.errors import LoaderError, UnsupportedFormatError
from footnote.ingest.loaders import Loader
from footnote.ingest.loaders.markdown import MarkdownLoader
from footnote.ingest.loaders.text import EMPTY_PROBLEM, TextLoader, read_bytes

MAX_DECOMPRESSED_BYTES = 512 * 1024 * 1024
_READ_SIZE = 1024 * 1024


def gunzip(path: Path, data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress `data`; a damaged stream or one larger than `limit` is a `LoaderError`."""
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            while piece := stream.read(_READ_SIZE):
                out += piece
                if len(out) > limit:
                    raise LoaderError(
                        path,
                        f"decompresses to more than {limit // (1024 * 1024)} MiB; "
                        "decompress it and split it into smaller files",
                    )
    except (OSError, EOFError, zlib.error) as exc:
        reason = " ".join(str(exc).split())[:100] or type(exc).__name__
        raise LoaderError(
            path, f"gzip data could not be read ({reason}); the file is truncated or corrupt — re-create it"
        ) from exc
    return bytes(out)


class GzipLoader(Loader):
    """`.gz` files holding text or Markdown, chosen by the suffix before `.gz`."""

    suffixes = (".gz",)
    format = "gzip"
    listed_order = 60
    inner: ClassVar[dict[str, TextLoader | MarkdownLoader]] = {
        **{suffix: MarkdownLoader() for suffix in MarkdownLoader.suffixes},
        **{suffix: TextLoader() for suffix in TextLoader.suffixes},
    }

    @property
    def formats_made(self) -> tuple[str, ...]:
        """A compressed file's document has its inner file's format (`notes.md.gz` is markdown)."""
        return tuple(dict.fromkeys(loader.format for loader in self.inner.values()))

    @classmethod
    def inner_loader(cls, path: Path) -> TextLoader | MarkdownLoader | None:
        return cls.inner.get(Path(path.name[: -len(".gz")]).suffix.lower())

    def unsupported(self, path: Path) -> str | None:
        if self.inner_loader(path) is not None:
            return None
        inner = Path(path.name[: -len(".gz")]).suffix
        what = f"'{inner}.gz'" if inner else "'.gz' without an inner extension"
        return (
            f"unsupported compressed file type {what}; supported: {', '.join(f'{s}.gz' for s in self.inner)}"
        )

    def load(self, path: Path) -> Document:
        loader = self.inner_loader(path)
        if loader is None:
            raise UnsupportedFormatError(path, self.unsupported(path) or "unsupported")
        data = read_bytes(path)
        if not data:
            raise LoaderError(path, EMPTY_PROBLEM)
        return loader.load_bytes(path, gunzip(path, data))
