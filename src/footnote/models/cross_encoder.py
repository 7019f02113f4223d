"""Opening a sentence-transformers CrossEncoder from local files only (never downloaded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from footnote.errors import ModelError


def open_cross_encoder(model: str, setting: str, alternatives: str = "") -> Any:
    """The CrossEncoder in folder `model`, or cached under that model id; a ModelError naming
    `setting` (the variable that chose it) and what it accepts when it cannot be loaded."""
    from sentence_transformers import CrossEncoder

    location = Path(model).expanduser()
    source = str(location) if location.exists() else model
    try:
        return CrossEncoder(source, device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"cross-encoder '{model}' could not be loaded ({exc}); set {setting} to a local "
            f"sentence-transformers CrossEncoder folder or a model id already in the Hugging Face cache"
            f"{alternatives}"
        ) from exc
