#!/usr/bin/env bash
# Builds the Python module for the GPU machine (issue 15, docs/python.md):
# LLVM and the C++ runtime linked into the extension itself (FMHAJIT_STATIC),
# built against the headers of a Python of the GPU machine's version (3.12,
# pyenv's here; PYTHON names another), plus the static CLI the tests call and
# fmhajit-bench-api (api::run's own CUDA cost, beside the Python calls'),
# xz-compressed into dist-py/ (ignored by git; pass `dist-py` in the device
# call's carry list, then run `bench/gpu/run.sh python`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-/root/.pyenv/versions/3.12.1/bin/python3.12}
[ -x "$python" ] || { echo "error: no Python at $python: set PYTHON to a python3.12 with its headers" >&2; exit 1; }
launcher=$(command -v ccache || true)
cmake -S "$root" -B "$root/build-py312" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 -DFMHAJIT_STATIC=ON \
  -DFMHAJIT_PYTHON=ON -DPython3_EXECUTABLE="$python" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_C_COMPILER_LAUNCHER="$launcher" >/dev/null
ninja -C "$root/build-py312" fmhajit-python fmhajit fmhajit-bench-api
mkdir -p "$root/dist-py"
# The package, and beside it the tests' array type with DLPack's exchange
# API (fmhajit_test_producer, which tests/python/test_exchange.py imports).
(cd "$root/build-py312/python" && tar -cf - fmhajit fmhajit_test_producer.*.so) |
  xz -T2 -6 > "$root/dist-py/fmhajit-python.tar.xz"
xz -T2 -6 -c "$root/build-py312/bin/fmhajit" > "$root/dist-py/fmhajit.xz"
xz -T2 -6 -c "$root/build-py312/bin/fmhajit-bench-api" > "$root/dist-py/fmhajit-bench-api.xz"
ls -la "$root/dist-py"
