#!/usr/bin/env bash
# Cold JIT on the GPU machine: each default sm_90a forward kernel compiled
# from nothing (a fresh fmhajit cache and a fresh, empty driver compute
# cache), then loaded again in a second process from fmhajit's cache (the
# PTX) and the driver's cache (its machine code for that PTX), as a user's
# second process would. Prints the `load` line of `fmhajit run` (codegen +
# driver) for each. The driver's step varies by up to half from process to
# process, so each kernel is compiled cold COLD_JIT_REPEATS times (default
# 3; report the median). An entry KEYS@S runs S queries (default 300): the
# plan's tile, and whether the kernel walks items and splits its last round,
# follow the length, so bf16 d = 128 at 4096 queries is the bn = 160 kernel
# with the split tail's fold, the largest default kernel. Usage:
#   bash bench/gpu/cold-jit.sh FMHAJIT_BINARY
set -uo pipefail
fj=${1:?usage: cold-jit.sh FMHAJIT_BINARY}
for entry in bf16,d=64 bf16,d=128 bf16,d=128@4096 bf16,d=256 bf16,d=256@4096 bf16,d=64,mask=causal \
    bf16,d=128,mask=causal bf16,d=256,mask=causal bf16,d=256,mask=causal,softcap=1,bias=alibi,lse=1 \
    fp8_e4m3,d=128 fp8_e4m3,d=128@4096 fp8_e4m3,d=256,mask=causal; do
  keys=${entry%@*} seqlen=300
  [ "$entry" != "$keys" ] && seqlen=${entry#*@}
  spec="family=fwd,dtype=$keys,target=sm_90a"
  for repeat in $(seq "${COLD_JIT_REPEATS:-3}"); do
    cache=$(mktemp -d)
    for pass in cold cached; do
      [ "$pass" = cached ] && [ "$repeat" -gt 1 ] && continue # one cached load is enough
      line=$(CUDA_CACHE_PATH="$cache/driver" FMHAJIT_CACHE_DIR="$cache/fmhajit" \
        timeout 60 "$fj" run "$spec" --device cuda --iters 1 --batch 1 --heads 2 --seqlen-q "$seqlen" 2>&1 |
        grep -E '^kernel|^load|^error' | head -2 | tr '\n' ' ')
      printf '%-6s %-56s %s\n' "$pass" "$entry" "$line"
    done
    rm -rf "$cache"
  done
done
