"""Uploaded files: a plain name, a supported type, a size cap, and never outside the uploads folder."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import BinaryIO

from footnote.core.collections import DEFAULT_COLLECTION, check_collection
from footnote.ingest.loaders import SUPPORTED_SUFFIXES
from footnote.server.errors import ApiError

COPY_BLOCK = 1 << 20


def upload_folder(home: Path, collection: str | None = None) -> Path:
    """Where uploads are kept: `uploads/` for the default collection (and, without
    `collection`, the folder that holds every upload), `uploads/collections/NAME/` for others."""
    folder = home / "uploads"
    if collection is not None and collection != DEFAULT_COLLECTION:
        folder = folder / "collections" / check_collection(collection)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def safe_upload_path(folder: Path, filename: str | None) -> Path:
    """Where an upload named `filename` is kept; refuses names that could point anywhere else."""
    name = (filename or "").strip()
    if not name:
        raise ApiError(400, "the upload has no file name; send the file with a filename", param="file")
    if (
        "/" in name
        or "\\" in name
        or name.startswith(".")
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in name)
        or len(name.encode("utf-8")) > 255
    ):
        raise ApiError(
            400,
            f"file name {name!r} refused: use a plain name (no folders, no leading dot, under 256 bytes)",
            param="file",
        )
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        what = f"'{suffix}' files" if suffix else "files without an extension"
        raise ApiError(
            415,
            f"{what} cannot be ingested; supported: {', '.join(SUPPORTED_SUFFIXES)}",
            param="file",
            code="unsupported_media_type",
        )
    path = folder / name
    # Belt and braces: a symlink planted in the folder must not lead elsewhere either.
    if path.resolve().parent != folder.resolve():
        raise ApiError(400, f"file name {name!r} refused: it leads outside the uploads folder", param="file")
    return path


def save_upload(source: BinaryIO, target: Path, limit: int) -> int:
    """Copy `source` to `target` through a temporary file; 413 once it passes `limit` bytes."""
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    size = 0
    try:
        with open(partial, "xb") as out:
            while block := source.read(COPY_BLOCK):
                size += len(block)
                if size > limit:
                    raise ApiError(413, f"the file is over the {limit:,}-byte upload limit", param="file")
                out.write(block)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return size
