"""llama.cpp, the default engine: a registered model name or a GGUF file, run in this process."""

from __future__ import annotations

from footnote.config import Settings
from footnote.models.base import Generator
from footnote.models.engines import DEFAULT_ENGINE, answer_engine


@answer_engine(DEFAULT_ENGINE)
def open_gguf(model: str, settings: Settings, display_name: str) -> Generator:
    """The GGUF `model` names (`footnote.models.gguf.local_gguf`: hash-checked, requantized once
    for `name@quantization`), on the settings' context length and threads."""
    from footnote.models.gguf import local_gguf
    from footnote.models.llama import LlamaCppGenerator

    return LlamaCppGenerator(
        local_gguf(model, settings),
        display_name=display_name,
        context_length=settings.context_tokens,
        threads=settings.threads,
    )
