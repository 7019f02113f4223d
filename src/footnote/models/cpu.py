"""The CPU under footnote, and the embedding runtime and precision that run fastest on it.

Measured on SciFact abstracts with the bundled MiniLM, 2 cores, tokens per second against a
plain sentence-transformers encode in float32 (`benchmarks/embed_runtimes.py`; its results and
the ingest benchmark's under benchmarks/results/ record the CPU's flags beside each figure):

| CPU | torch fp32 | torch bf16 | ONNX fp32 | ONNX int8 |
|---|---|---|---|---|
| AMD EPYC, AVX2, no AVX-512 (export before fusion) | 1.0x | (no bf16 units) | | 1.42x |
| Intel Xeon, AVX-512 VNNI and AMX | 1.0x | 3.19x | 1.36x | 3.21x |
| the same, the process refused the AMX tiles | 1.0x | 0.70x | 1.25x | 2.39x |

bf16 matrix products pay only where the CPU has AMX tiles for them: without them torch's bf16 is
slower than its float32 and than ONNX Runtime's int8, so AVX512_BF16 and AVX-VNNI without AMX
take int8 through ONNX Runtime, the fastest choice measured wherever AMX is missing. With the
tiles the two run as fast as each other, and bf16 is kept for vectors within 3e-5 of the float
ones that do not move with the texts batched beside them (`embed_runtimes-20261206-022443.json.xz`,
`embed_runtimes-no-amx-20261206-022556.json.xz`; before the export was fused, int8 ran 1.11x on the
Xeon: `embed_runtimes-20261204-204214.json.xz`).
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from pathlib import Path

# The variable that caps the instruction sets oneDNN uses (AVX512_CORE_BF16: no AMX tiles).
ONEDNN_CAP = "ONEDNN_MAX_CPU_ISA"
# Flags that the embedding kernels pick their paths by; what a benchmark records.
_KERNEL_FLAGS = ("avx", "fma", "vnni", "amx", "sse4", "f16c", "bf16")
# Linux on x86-64: the system calls and constants that grant (and here refuse) the AMX tiles.
_ARCH_PRCTL = 158
_ARCH_REQ_XCOMP_PERM = 0x1023
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_amx_withheld = False


@lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str, frozenset[str]]:
    try:
        rows = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:  # not Linux: no flags, so no choice that needs them
        rows = []
    flags = next((row for row in rows if row.startswith("flags")), "").split(":", 1)[-1].split()
    model = next((row for row in rows if row.startswith("model name")), "").split(":", 1)[-1].strip()
    return model or platform.processor(), frozenset(flags)


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags that this process may use (empty where the system does not list
    them): what the runtime choices go by. A process refused the AMX tiles (`withhold_amx`) has
    none of the `amx_` flags; `cpu_description` still lists what the CPU has."""
    flags = _cpuinfo()[1]
    return frozenset(f for f in flags if not f.startswith("amx_")) if _amx_withheld else flags


def cpu_description() -> dict[str, object]:
    """The CPU's model, core count and the flags that matter to embedding kernels."""
    model, flags = _cpuinfo()
    return {
        "cpus": os.cpu_count(),
        "cpu": model,
        "cpu_flags": sorted(flag for flag in flags if any(w in flag for w in _KERNEL_FLAGS)),
    }


def machine() -> dict[str, object]:
    """What a saved speed figure is read beside: the CPU, its vector-instruction flags (what int8,
    bf16 and float kernels pick their paths by), Python, and the load when it was measured (other
    work on the machine slows what is timed)."""
    described: dict[str, object] = {
        **cpu_description(),
        "python": platform.python_version(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }
    # oneDNN (torch's CPU kernels) held below the CPU's best instructions: what a run that stands
    # in for an older CPU was measured under.
    capped = os.environ.get(ONEDNN_CAP)
    if capped:
        described[ONEDNN_CAP.lower()] = capped
    if _amx_withheld:
        described["amx_withheld"] = True
    return described


def withhold_amx() -> None:
    """Refuses this process (and what it starts) the AMX tiles, for the rest of its life.

    Linux lends the tiles only to a process that asks for them (arch_prctl
    ARCH_REQ_XCOMP_PERM); oneDNN and ONNX Runtime ask before they use them and take their
    AVX-512 paths when refused. A seccomp filter that answers that one request EPERM makes
    both run as on a CPU without AMX, which a benchmark on an AMX machine stands in for such
    a CPU with: `cpu_flags()`, and so the `auto` choices, then leave AMX out, and `machine()`
    records that it was withheld. Call it before any model runs: a grant already
    made stays. Raises OSError off Linux x86-64 or when the kernel refuses the filter."""
    import ctypes
    import struct

    global _amx_withheld
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        raise OSError("withholding AMX needs Linux on x86-64")
    # Classic BPF over seccomp_data: syscall number at offset 0, first argument's low word at 16.
    load, jump_equal, ret = 0x20, 0x15, 0x06
    program = [
        (load, 0, 0, 0),
        (jump_equal, 0, 3, _ARCH_PRCTL),
        (load, 0, 0, 16),
        (jump_equal, 0, 1, _ARCH_REQ_XCOMP_PERM),
        (ret, 0, 0, 0x00050000 | 1),  # SECCOMP_RET_ERRNO with EPERM
        (ret, 0, 0, 0x7FFF0000),  # SECCOMP_RET_ALLOW
    ]
    instructions = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in program))

    class Program(ctypes.Structure):
        _fields_ = [("length", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    filter_program = Program(len(program), ctypes.cast(instructions, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or (
        libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(filter_program), 0, 0) != 0
    ):
        raise OSError(ctypes.get_errno(), "the kernel refused the seccomp filter that withholds AMX")
    _amx_withheld = True


def fastest_embedding(flags: frozenset[str]) -> tuple[str, str]:
    """The (runtime, precision) that embeds fastest on a CPU with `flags`: bf16 through torch
    with AMX tiles, int8 through ONNX Runtime otherwise, AVX512_BF16 and VNNI alone included
    (torch's bf16 without AMX measured 0.29x the int8 graph)."""
    if "amx_bf16" in flags:
        return "torch", "bf16"
    return "onnx", "int8"


def choose_embedding(
    runtime: str, precision: str, built: tuple[str, str] | None, flags: frozenset[str], local: bool = True
) -> tuple[str, str]:
    """The (runtime, precision) to embed with, from the settings (either may be "auto").

    An existing index's recorded choice (`built`) fills what is "auto", so an index keeps being
    searched with what embedded it; a setting that contradicts it is kept, and the index then
    refuses to open, naming the settings that would. Without an index, "auto" is the fastest on
    this CPU. A model that is not a local folder has nothing to export, so torch runs it.
    """
    if not local:
        runtime = "torch"
    if built is not None and runtime in ("auto", built[0]) and precision in ("auto", built[1]):
        return built
    fast = fastest_embedding(flags) if local else ("torch", "int8")
    if runtime == "auto" and precision == "auto":
        return fast
    if runtime == "auto":
        runtime = "torch" if precision == "bf16" else "onnx"
    if precision == "auto":
        precision = fast[1] if runtime == fast[0] else "int8"
    return runtime, precision


def fastest_scoring(flags: frozenset[str]) -> str:
    """The perplexity runtime that scores fastest on a CPU with `flags`: torch in bf16 where it
    has AMX tiles (about 1.7x transformers' float32 there, while llama.cpp ran at 0.3-0.8x it),
    llama.cpp elsewhere (`footnote bench ppl` measures both on the machine it runs on)."""
    return "torch-bf16" if "amx_bf16" in flags else "llama.cpp"
