"""Which runtime and precision embed (as set, else as the existing index records, else the
fastest on the CPU, so an index is never silently searched with vectors of another kind), and
which runtime scores perplexity."""

from __future__ import annotations

import errno
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from footnote.models.cpu import choose_embedding, fastest_embedding, fastest_scoring
from footnote.store.vectors import INDEX_FORMAT_VERSION, recorded_embedding

AMX = frozenset({"avx512f", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile"})
AVX2 = frozenset({"avx", "avx2", "fma"})
# AVX-512 with bf16 and VNNI units but no AMX tiles (as on AMD Zen 4, or Intel Cooper Lake).
BF16_WITHOUT_AMX = frozenset({"avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni"})


def test_the_fastest_choice_follows_the_cpu() -> None:
    assert fastest_embedding(AMX) == ("torch", "bf16")
    assert fastest_embedding(AVX2) == ("onnx", "int8")
    # torch's bf16 kernels without AMX were measured slower than ONNX Runtime's int8 ones.
    assert fastest_embedding(BF16_WITHOUT_AMX) == ("onnx", "int8")
    assert fastest_embedding(frozenset()) == ("onnx", "int8")  # no flags listed: the portable choice


@pytest.mark.parametrize(
    ("runtime", "precision", "built", "flags", "chosen"),
    [
        ("auto", "auto", None, AMX, ("torch", "bf16")),
        ("auto", "auto", None, AVX2, ("onnx", "int8")),
        # An index built elsewhere keeps its choice on this CPU, whatever is fastest here.
        ("auto", "auto", ("onnx", "int8"), AMX, ("onnx", "int8")),
        ("auto", "auto", ("torch", "bf16"), AVX2, ("torch", "bf16")),
        ("auto", "int8", ("onnx", "int8"), AMX, ("onnx", "int8")),
        # A setting that contradicts the index is kept: the index then refuses, naming the fix.
        ("auto", "fp32", ("onnx", "int8"), AMX, ("onnx", "fp32")),
        ("torch", "auto", ("onnx", "int8"), AVX2, ("torch", "int8")),
        # One half set: the other follows it.
        ("auto", "bf16", None, AVX2, ("torch", "bf16")),
        ("auto", "fp32", None, AMX, ("onnx", "fp32")),
        ("torch", "auto", None, AMX, ("torch", "bf16")),
        ("onnx", "auto", None, AMX, ("onnx", "int8")),
        ("onnx", "fp32", None, AMX, ("onnx", "fp32")),
    ],
)
def test_the_settings_then_the_index_then_the_cpu_choose(
    runtime: str,
    precision: str,
    built: tuple[str, str] | None,
    flags: frozenset[str],
    chosen: tuple[str, str],
) -> None:
    assert choose_embedding(runtime, precision, built, flags) == chosen


def test_a_model_id_runs_in_torch() -> None:
    assert choose_embedding("auto", "auto", None, AMX, local=False) == ("torch", "int8")
    assert choose_embedding("auto", "fp32", None, AMX, local=False) == ("torch", "fp32")


def _params(folder: Path, embedder: str, version: int = INDEX_FORMAT_VERSION) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "params.json").write_text(
        json.dumps({"format": version, "embedder": embedder, "dimension": 384})
    )
    return folder


def test_the_recorded_choice_is_read_only_for_the_same_model(tmp_path: Path) -> None:
    assert recorded_embedding(tmp_path / "none", "minilm-l6") is None
    index = _params(tmp_path / "a", "minilm-l6@torch-bf16")
    assert recorded_embedding(index, "minilm-l6") == ("torch", "bf16")
    assert recorded_embedding(index, "bge-small") is None
    assert recorded_embedding(_params(tmp_path / "b", "minilm-l6@python-fp32"), "minilm-l6") is None
    assert recorded_embedding(_params(tmp_path / "c", "minilm-l6", version=1), "minilm-l6") is None
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "params.json").write_text("{not json")
    assert recorded_embedding(tmp_path / "d", "minilm-l6") is None


def test_perplexity_is_scored_in_bf16_only_where_the_cpu_has_amx() -> None:
    assert fastest_scoring(AMX) == "torch-bf16"
    assert fastest_scoring(AVX2) == "llama.cpp"


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64", reason="AMX is lent by Linux on x86-64"
)
def test_a_process_that_withholds_amx_is_refused_the_tiles_and_nothing_else() -> None:
    # In a child process: the filter stays for the life of the process that installs it.
    script = (
        "import ctypes, os\n"
        "from footnote.models.cpu import cpu_flags, machine, withhold_amx\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "withhold_amx()\n"
        "refused = libc.syscall(158, 0x1023, 18)\n"
        "amx = [f for f in cpu_flags() if f.startswith('amx')]\n"
        "print(refused, ctypes.get_errno(), os.getpid() > 0, machine().get('amx_withheld'), len(amx))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # Refused the tiles, other calls answered, the withholding recorded, no AMX left to choose by.
    assert done.stdout.split() == ["-1", str(errno.EPERM), "True", "True", "0"]
