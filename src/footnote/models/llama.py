"""In-process generation with llama.cpp (llama-cpp-python)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from footnote.errors import ModelError
from footnote.models.base import GenerationParams, Generator, Message
from footnote.models.cpu_share import free_cores


def open_llama(model_path: Path, *, n_ctx: int, threads: int = 0, **options: Any) -> Any:
    """A llama.cpp model on `threads` CPU threads (0: every core) with flash attention;
    a file llama.cpp cannot load is a ModelError naming it."""
    from llama_cpp import Llama

    threads = threads or os.cpu_count() or 1
    try:
        return Llama(
            model_path=str(model_path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            flash_attn=True,
            verbose=False,
            **options,
        )
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"llama.cpp could not load {model_path} ({exc}); is it a GGUF model file?") from exc


@contextmanager
def quiet_llama_log() -> Iterator[None]:
    """Silence llama.cpp's own log (it goes through this Python logger) for one call."""
    logger = logging.getLogger("llama-cpp-python")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class LlamaCppGenerator(Generator):
    """A GGUF chat model run in this process; the GGUF's own chat template formats prompts."""

    def __init__(
        self,
        model_path: Path,
        display_name: str | None = None,
        context_length: int = 2048,
        threads: int = 0,
    ) -> None:
        self._llm: Any = open_llama(model_path, n_ctx=context_length, threads=threads)
        self.name = display_name or model_path.name
        self.context_length = context_length
        self.model_path = model_path
        # 0: as many threads as the cores other processes leave free, read before each answer.
        self._shares_cores = threads == 0
        self._threads = self._llm.n_threads

    def stream(self, messages: Sequence[Message], params: GenerationParams) -> Iterator[str]:
        self._share_cores()
        chunks = self._llm.create_chat_completion(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            stream=True,
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            stop=list(params.stop) or None,
            seed=params.seed,
            repeat_penalty=params.repeat_penalty,
        )
        for chunk in chunks:
            piece = chunk["choices"][0]["delta"].get("content")
            if piece:
                yield piece

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _share_cores(self) -> None:
        """Run on the cores other processes leave free (`footnote.models.cpu_share`): threads
        that wait for one another at every step lose more to a busy core than they gain from it."""
        if not self._shares_cores:
            return
        import llama_cpp

        wanted = free_cores()
        if wanted != self._threads:
            llama_cpp.llama_set_n_threads(self._llm.ctx, wanted, wanted)
            self._threads = wanted
