"""Which GGUF file a model name stands for: a registered model, a path, or either requantized once.

`name@quantization` (for example `smollm2-135m@q8_0`) is made once with llama.cpp into the
model folder and hash-checked on every later load.
"""

from __future__ import annotations

from pathlib import Path

from footnote.config import Settings
from footnote.models.registry import JOINED_MODELS, REGISTRY, joined_model, resolve_llm


def local_gguf(spec: str, settings: Settings) -> Path:
    """The GGUF for a registered name or a path, either with `@quantization` (made once, hash-checked)."""
    name, _, quantization = spec.partition("@")
    if name in JOINED_MODELS:
        source = joined_model(JOINED_MODELS[name], settings.model_cache)
    elif quantization and (name in REGISTRY or name.endswith(".gguf")):
        source = resolve_llm(name)
    else:
        return resolve_llm(spec)
    if not quantization:
        return source
    from footnote.models.requantize import requantized

    return requantized(source, quantization, settings.model_cache)


def answer_model_spec(settings: Settings) -> str:
    """The answer model as a spec: `llm`, with `@llm_quantization` when that is set and `llm`
    names a registered model or a GGUF file without its own `@quantization`. Perplexity is
    scored with it too unless another model is named."""
    spec = settings.llm
    quantizable = spec in REGISTRY or spec in JOINED_MODELS or spec.endswith(".gguf")
    if settings.llm_quantization and quantizable:
        spec = f"{spec}@{settings.llm_quantization}"
    return spec


def answer_model_file(settings: Settings) -> Path:
    """The GGUF the answer model is run from (`answer_model_spec`)."""
    return local_gguf(answer_model_spec(settings), settings)
