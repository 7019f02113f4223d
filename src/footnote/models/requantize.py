"""Requantized copies of a GGUF (llama.cpp's quantize API), kept with their SHA-256.

`smollm2-135m@q8_0` names the bundled Q4_1 model converted to Q8_0. Requantizing never
adds back precision the source lost: it measures what the new format costs or saves on
top of the source (and `f32` is the source dequantized exactly). The copy is written
once into FOOTNOTE_HOME/models with a `.sha256` file beside it; later runs check the
copy against that hash before using it.
"""

from __future__ import annotations

import os
from pathlib import Path

from footnote.errors import ModelError
from footnote.models.llama import quiet_llama_log
from footnote.models.registry import sha256_file, verify_file

FILE_TYPES = {  # name -> llama_ftype
    "f32": 0,
    "f16": 1,
    "q4_0": 2,
    "q4_1": 3,
    "q8_0": 7,
    "q5_0": 8,
    "q5_1": 9,
    "q6_k": 18,
    "q4_k_m": 15,
    "q5_k_m": 17,
    "bf16": 32,
}


def requantized(source: Path, kind: str, models_dir: Path, threads: int = 0) -> Path:
    """A copy of `source` in format `kind` (e.g. "q8_0"), made on first use and hash-checked after."""
    kind = kind.lower()
    if kind not in FILE_TYPES:
        raise ModelError(f"unknown quantization '{kind}'; use one of {', '.join(FILE_TYPES)}")
    target = models_dir / f"{source.stem}.requant-{kind}.gguf"
    digest_file = target.with_name(target.name + ".sha256")
    if target.is_file() and digest_file.is_file():
        expected = digest_file.read_text(encoding="utf-8").split()[0]
        verify_file(target, expected, f"delete {target} and {digest_file.name} to requantize")
        return target
    _quantize(source, target, FILE_TYPES[kind], threads)
    # Written whole or not at all: another process may be checking the copy at the same moment.
    partial_digest = digest_file.with_name(f"{digest_file.name}.{os.getpid()}.partial")
    partial_digest.write_text(f"{sha256_file(target)}  {target.name}\n", encoding="utf-8")
    os.replace(partial_digest, digest_file)
    return target


def _quantize(source: Path, target: Path, file_type: int, threads: int) -> None:
    import llama_cpp

    target.parent.mkdir(parents=True, exist_ok=True)
    # Each process writes its own partial file: two that requantize the same model at once (two
    # test workers, two servers on one model folder) each replace the copy whole with the same bytes.
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads or os.cpu_count() or 1
    params.ftype = file_type
    params.allow_requantize = True
    with quiet_llama_log():
        status = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), params)
    if status != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise ModelError(f"llama.cpp could not requantize {source} (status {status}); is it a GGUF model?")
    os.replace(partial, target)
