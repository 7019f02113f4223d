#!/usr/bin/env bash
# Create .venv and install footnote with its pinned dependencies.
#
# llama-cpp-python is built from source. A native build enables AMX kernels that
# crash on CPUs which advertise AMX without supporting it, so the build flags are
# fixed here. pip caches wheels by version only, so the built wheel is kept in a
# cache folder keyed by the flags and the version, never in pip's own cache.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=${VENV:-.venv}
LLAMA_CPP_VERSION=0.3.36
TORCH_VERSION=2.13.0

# The instruction sets to compile for: each one this CPU reports, never AMX and never
# "native" detection. On CPUs with every extension this gives
#   -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON
#   -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON -DGGML_BMI2=ON
# and on CPUs without VNNI/BF16 those stay OFF (turning them on there gives SIGILL).
# FOOTNOTE_CMAKE_ARGS overrides the detection.
cpu_flag() { grep -m1 -o -w "$1" /proc/cpuinfo >/dev/null 2>&1 && echo ON || echo OFF; }
detect_cmake_args() {
  echo "-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
    "-DGGML_AVX=$(cpu_flag avx) -DGGML_AVX2=$(cpu_flag avx2) -DGGML_FMA=$(cpu_flag fma)" \
    "-DGGML_F16C=$(cpu_flag f16c) -DGGML_AVX512=$(cpu_flag avx512f)" \
    "-DGGML_AVX512_VNNI=$(cpu_flag avx512_vnni) -DGGML_AVX512_BF16=$(cpu_flag avx512_bf16)" \
    "-DGGML_AVX_VNNI=$(cpu_flag avx_vnni) -DGGML_BMI2=$(cpu_flag bmi2)"
}
export CMAKE_ARGS="${FOOTNOTE_CMAKE_ARGS:-$(detect_cmake_args)}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip)

"${PIP[@]}" install --quiet "torch==${TORCH_VERSION}"

flags_key=$(printf '%s %s' "$LLAMA_CPP_VERSION" "$CMAKE_ARGS" | sha256sum | cut -c1-16)
wheel_dir="${FOOTNOTE_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/footnote/wheels}/llama-cpp-$flags_key"
if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python ${LLAMA_CPP_VERSION} from source (AMX-safe flags; about 5 minutes on 2 cores)"
  mkdir -p "$wheel_dir.tmp"
  "${PIP[@]}" wheel --no-cache-dir --no-deps --wheel-dir "$wheel_dir.tmp" "llama-cpp-python==${LLAMA_CPP_VERSION}"
  rm -rf "$wheel_dir" && mv "$wheel_dir.tmp" "$wheel_dir"
fi
"${PIP[@]}" install --quiet "$wheel_dir"/llama_cpp_python-*.whl

"${PIP[@]}" install --quiet -e ".[dev]"
echo "footnote installed in $VENV"
