#!/bin/sh
# ctest's bench_api_cuda_quick: `fmhajit-bench-api --device cuda --quick`
# either runs (a GPU is here) or stops with exactly one "error:" line about
# the CUDA driver and exit status 1: never a crash, never a second message.
# Usage: check-cuda-mode.sh BENCH_API JSON
out=$("$1" --device cuda --quick --json "$2" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 0 ] && exit 0
[ "$rc" = 1 ] || { echo "FAIL: exit status $rc, expected 0 or 1"; exit 1; }
[ "$(echo "$out" | grep -c '^error: ')" = 1 ] || { echo "FAIL: expected one error line"; exit 1; }
echo "$out" | grep -q '^error: .*CUDA driver' || { echo "FAIL: the error does not name the CUDA driver"; exit 1; }
