#!/usr/bin/env bash
# persistent-causal: check the persistent causal schedule (ir/PersistentSchedule.h)
# with bounded waits, then time it against a block per work item.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/fj
xz -dc dist/fmhajit.xz > /tmp/fj/fmhajit; chmod +x /tmp/fj/fmhajit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
export FMHAJIT_CACHE_DIR=/tmp/fj/cache
log="$out/check.log"
fj() { echo "== $*" >> "$log"; FMHAJIT_BOUNDED_WAITS=1 timeout 90 /tmp/fj/fmhajit run "$@" --device cuda --check --iters 2 >> "$log" 2>&1 || echo "rc=$? $*" >> "$log"; }
fj family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a --batch 3 --heads 5 --seqlen-q 1000
fj family=fwd,dtype=fp16,d=64,mask=causal_br,lse=1,target=sm_90a --batch 2 --heads 32 --heads-kv 4 --seqlen-q 2047
export FMHAJIT_PERSISTENT_MAX_KEYS=1000000
fj family=fwd,dtype=bf16,d=128,mask=causal,lse=1,target=sm_90a --batch 4 --heads 16 --seqlen-q 3000 --seqlen-k 4000
fj family=fwd,dtype=bf16,d=256,mask=causal,target=sm_90a --batch 1 --heads 40 --seqlen-q 3000
fj family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a --batch 1 --heads 13 --seqlen-q 9000
fj family=fwd,dtype=bf16,d=128,mask=causal_br,target=sm_90a --batch 2 --heads 8 --seqlen-q 700 --seqlen-k 5000
fj family=fwd,dtype=bf16,d=128,mask=window,target=sm_90a --batch 2 --heads 8 --seqlen-q 3000 --window 300,20
fj family=fwd,dtype=bf16,d=64,mask=causal,softcap=1,bias=alibi,lse=1,target=sm_90a --batch 2 --heads 16 --seqlen-q 2500 --softcap 30
fj family=fwd,dtype=fp8_e4m3,d=128,mask=causal,lse=1,target=sm_90a --batch 2 --heads 16 --seqlen-q 2600
fj family=fwd,dtype=bf16,d=128,target=sm_90a --batch 1 --heads 16 --seqlen-q 5000
unset FMHAJIT_PERSISTENT_MAX_KEYS
echo "PASS $(grep -c 'check    PASS' "$log") FAIL $(grep -c 'check    FAIL\|^error\|^rc=' "$log")" | tee -a "$out/summary.txt"
grep -B1 "FAIL\|^error\|^rc=" "$log" | head -20
# Persistent (a block per multiprocessor at every length) against a block per
# item, the same binary, each row back to back, with FA2 and cuDNN.
FMHAJIT_PERSISTENT_MAX_KEYS=1000000 PYTHONUNBUFFERED=1 timeout 420 python3 bench/gpu/bench.py --fmhajit /tmp/fj/fmhajit \
  --baseline /tmp/fj/fmhajit --baseline-env FMHAJIT_PERSISTENT_MAX_KEYS=0 --peers FLASH_ATTENTION,CUDNN_ATTENTION \
  --dtypes bf16 --seqlens "${SEQLENS:-512,1024,2048,4096,8192,16384}" --masks causal --json "$out/ab.json" 2>&1 | tee "$out/ab.log"
