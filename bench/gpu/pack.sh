#!/usr/bin/env bash
# Builds the binaries that travel to the GPU machine: LLVM and the C++ runtime
# linked in, stripped, xz-compressed into dist/ (ignored by git; pass `dist`
# in the device call's carry list).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$root" -B "$root/build-static" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22 -DFMHAJIT_STATIC=ON \
  -DFMHAJIT_PYTHON=OFF >/dev/null
ninja -C "$root/build-static" fmhajit fmhajit_e2e_tests fmhajit-bench-decode fmhajit-bench-api
mkdir -p "$root/dist"
for b in fmhajit fmhajit_e2e_tests fmhajit-bench-decode fmhajit-bench-api; do
  xz -T2 -6 -c "$root/build-static/bin/$b" > "$root/dist/$b.xz"
done
ls -la "$root/dist"
