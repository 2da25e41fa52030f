#!/usr/bin/env bash
# Cold plans on the GPU machine: each plan's kernels compiled and loaded from
# nothing (fresh fmhajit and driver caches), one at a time
# (FMHAJIT_COMPILE_THREADS=1) and side by side (the default), in turns, so
# both see the same host. Prints `fmhajit plan --load`'s wall clock and each
# step's load line. Plans of several kernels: the backward (three, or two
# when deterministic), split-KV decode (split and combine), and the
# autotuner's candidates. The wall clock includes the process's CUDA
# context (about 0.23 s on an H100 host: a plan whose kernels are in both
# caches). COLD_PLAN_REPEATS (default 3).
#   bash bench/gpu/cold-plans.sh FMHAJIT_BINARY
set -uo pipefail
fj=${1:?usage: cold-plans.sh FMHAJIT_BINARY}
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
plans=(
  "backward bf16 d128|--backward --batch 4 --heads 16 --seqlen-q 4096 --d 128"
  "backward bf16 d128 causal, deterministic|--backward --deterministic --batch 4 --heads 16 --seqlen-q 4096 --d 128 --mask causal"
  "decode 8:1 128k|--heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 131072 --d 128"
  "autotune bf16 d128 causal|--autotune --batch 2 --heads 16 --seqlen-q 2048 --d 128 --mask causal"
)
for repeat in $(seq "${COLD_PLAN_REPEATS:-3}"); do
  for entry in "${plans[@]}"; do
    name=${entry%%|*} flags=${entry#*|}
    for threads in 1 0; do
      cache=$(mktemp -d)
      # shellcheck disable=SC2086 # $flags is a list of flags
      out=$(CUDA_CACHE_PATH="$cache/driver" FMHAJIT_CACHE_DIR="$cache/fmhajit" \
        FMHAJIT_COMPILE_THREADS=$threads timeout 300 "$fj" plan --device cuda --load $flags 2>&1)
      total=$(grep -E '^planned and loaded|^error' <<<"$out" | head -1)
      loads=$(grep -E '^  load ' <<<"$out" | sed 's/^  load *//' | tr '\n' ';')
      printf '%-42s threads=%s repeat %s: %s | %s\n' "$name" "$threads" "$repeat" "$total" "$loads"
      rm -rf "$cache"
    done
  done
done
