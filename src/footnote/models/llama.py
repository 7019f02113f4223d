"""In-process generation with llama.cpp (llama-cpp-python)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from footnote.errors import ModelError
from footnote.models.base import GenerationParams, Generator, Message


class LlamaCppGenerator(Generator):
    """A GGUF chat model run in this process; the GGUF's own chat template formats prompts."""

    def __init__(
        self,
        model_path: Path,
        display_name: str | None = None,
        context_length: int = 2048,
        threads: int = 0,
    ) -> None:
        from llama_cpp import Llama

        try:
            self._llm: Any = Llama(
                model_path=str(model_path),
                n_ctx=context_length,
                n_threads=threads or os.cpu_count() or 1,
                flash_attn=True,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(
                f"llama.cpp could not load {model_path} ({exc}); is it a GGUF model file?"
            ) from exc
        self.name = display_name or model_path.name
        self.context_length = context_length
        self.model_path = model_path

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        chunks = self._llm.create_chat_completion(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            stream=True,
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            stop=list(params.stop) or None,
            seed=params.seed,
        )
        for chunk in chunks:
            piece = chunk["choices"][0]["delta"].get("content")
            if piece:
                yield piece

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
