#!/usr/bin/env bash
# sparsity: block sparsity on the H100 (issue 14, docs/variants.md#block-sparsity).
# Build here first with bench/gpu/pack.sh (dist/ holds fmhajit.xz and
# fmhajit_e2e_tests.xz; carry dist). On the GPU machine, from the checkout:
#   OUT=... bash bench/gpu/sparsity.sh
# (1) checks, every one with bounded mbarrier waits and under timeout: the
#     CudaBlockSparsity e2e cases, then `fmhajit run --check` of the example
#     masks on both pipelines, with the map and without;
# (2) timing: the document mask (8 documents in 16384 tokens) with the map
#     against --no-block-sparsity, and causal through mask_mod against the
#     built-in causal kernel (bench/sparsity/sparsity.py, JSON in $OUT).
# Well under 5 minutes: the checks take about a minute, the timing two.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/fj
for b in fmhajit fmhajit_e2e_tests; do
  xz -dc "$root/dist/$b.xz" > /tmp/fj/$b && chmod +x /tmp/fj/$b
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
export FMHAJIT_CACHE_DIR=/tmp/fj/cache FMHAJIT_SOURCE_DIR="$root"
log="$out/check.log"; : > "$log"
FMHAJIT_BOUNDED_WAITS=1 FMHAJIT_BINARY=/tmp/fj/fmhajit timeout 150 /tmp/fj/fmhajit_e2e_tests \
  --gtest_filter='*CudaBlockSparsity*' --gtest_brief=1 > "$out/e2e.log" 2>&1
echo "e2e rc=$?" | tee -a "$out/summary.txt"; tail -15 "$out/e2e.log"
ex="$root/examples/variants"
fj() { echo "== $*" >> "$log"; FMHAJIT_BOUNDED_WAITS=1 timeout 60 /tmp/fj/fmhajit run "$@" --device cuda --check --iters 2 >> "$log" 2>&1 || echo "rc=$? $*" >> "$log"; }
for v in document_mask prefix_lm chunked_local alibi; do
  fj dtype=bf16,d=128,target=sm_90a --variant "$ex/$v.cpp" --batch 2 --heads 8 --seqlen-q 3000
  fj dtype=bf16,d=128,target=sm_90a,pipeline=mma --variant "$ex/$v.cpp" --batch 2 --heads 8 --seqlen-q 3000
done
fj dtype=bf16,d=64,lse=1,target=sm_90a --variant "$ex/document_mask.cpp" --heads 16 --seqlen-q 16384
fj dtype=bf16,d=64,lse=1,target=sm_90a --variant "$ex/document_mask.cpp" --heads 16 --seqlen-q 16384 --no-block-sparsity
fj dtype=bf16,d=128,mask=causal,target=sm_90a --variant "$root/bench/sparsity/causal_mask.cpp" --batch 2 --heads 8 --seqlen-q 5000 --seqlen-k 7000
echo "PASS $(grep -c 'check    PASS' "$log") FAIL $(grep -c 'check    FAIL\|^error\|^rc=' "$log")" | tee -a "$out/summary.txt"
grep -B1 "FAIL\|^error\|^rc=" "$log" | head -20
# The same binary times both sides of each ratio, alternating.
timeout 200 python3 "$root/bench/sparsity/sparsity.py" --fmhajit /tmp/fj/fmhajit --device cuda \
  --rounds 3 --json "$out/sparsity.json" 2>&1 | tee "$out/sparsity.log"
