#!/usr/bin/env bash
# Cold JIT on the GPU machine: each default sm_90a forward kernel compiled
# from nothing (a fresh fmhajit cache and a fresh, empty driver compute
# cache), then loaded again in a second process from fmhajit's cache (the
# PTX) and the driver's cache (its machine code for that PTX), as a user's
# second process would. Prints the `load` line of `fmhajit run` (codegen +
# driver) for each. The driver's step varies by up to half from process to
# process, so each kernel is compiled cold COLD_JIT_REPEATS times (default
# 3; report the median). An entry KEYS@S runs S queries (default 300). A
# spec that leaves the tile open runs its family's default tile, not the
# dispatcher's pick, so the entries pin the tiles the plan takes at 4096
# queries (`fmhajit plan --device cuda --target sm_90a`) where they differ:
# bf16 d = 128's bn = 160 (the largest default kernel, with the split tail's
# fold), and fp8's V^T tiles. COLD_JIT_ENTRIES replaces the list. Usage:
#   bash bench/gpu/cold-jit.sh FMHAJIT_BINARY
set -uo pipefail
fj=${1:?usage: cold-jit.sh FMHAJIT_BINARY}
# The host's CPU and load: the same kernels compiled 2-2.7x as slowly on one
# H100 machine as on another (session 42).
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
tile128='bm=128,bn=160,warps=8,stages=2,pipeline=wgmma'
fp8d128='bm=192,bn=96,warps=12,stages=2,v_pretranspose=1,pipeline=wgmma'
fp8d256='bm=128,bn=96,warps=8,stages=2,v_pretranspose=1,pipeline=wgmma'
default_entries="bf16,d=64 bf16,d=128 bf16,d=128,$tile128@4096 bf16,d=256 bf16,d=64,mask=causal \
  bf16,d=128,mask=causal bf16,d=256,mask=causal bf16,d=256,mask=causal,softcap=1,bias=alibi,lse=1 \
  fp8_e4m3,d=128,$fp8d128@4096 fp8_e4m3,d=256,mask=causal,$fp8d256@4096"
for entry in ${COLD_JIT_ENTRIES:-$default_entries}; do
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
