#!/usr/bin/env bash
# The GPU machine's one call: unpack the binaries built here (bench/gpu/pack.sh),
# (1) run the GPU end-to-end tests, (2) check a few kernels from the CLI,
# (3) run the benchmark against PyTorch SDPA; `decode` times split-KV decode
# and the plan's choice on the GPU against PyTorch (bench/decode); `backward-host` times the host
# backward against PyTorch's CPU SDPA backward; `sanitize` runs compute-sanitizer
# and the bounded-wait kernels; `api-overhead` times api::run's host cost per
# call against cuLaunchKernel (bench/api, docs/bench.md). Logs and JSON go to $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/fmhajit-out}
mode=${1:-all}   # all | e2e | bench | grid | quick | tune | decode | decode-host | dead-rows | sanitize | stalls | backward | backward-host | fp8 | profile | python | api-overhead
shift || true      # the rest goes to bench.py
mkdir -p "$out" /tmp/fj
for b in fmhajit fmhajit_e2e_tests fmhajit-bench-decode fmhajit-bench-api; do
  [ -f "$root/dist/$b.xz" ] && xz -dc "$root/dist/$b.xz" > /tmp/fj/$b && chmod +x /tmp/fj/$b
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
export FMHAJIT_CACHE_DIR=/tmp/fj/cache FMHAJIT_SOURCE_DIR="$root" # examples/variants for the e2e tests
# E2E_FILTER narrows the GPU tests to a GoogleTest filter (docs/bench.md).
filter=${E2E_FILTER:-'*Cuda*:*Gpu*:*Hip*:ApiDecode*:ApiPinned*:*Capability*:*Driver*'}
if [ "$mode" = dead-rows ]; then
  # FMHAJIT_DEAD_ROWS=1 (docs/bench.md): the e2e tables of packed and split
  # decode with the option on, then (below) four checks and timed rows.
  export FMHAJIT_DEAD_ROWS=1
  filter='*PackGqa*:ApiCuda*:CudaFamilies*'
fi
if [ "$mode" = all ] || [ "$mode" = e2e ] || [ "$mode" = dead-rows ]; then
  # The suite compiles hundreds of kernels, and the compile (codegen and the
  # driver's PTX-to-SASS step) is CPU-bound: E2E_JOBS processes (default 8)
  # each run one GoogleTest shard on the same GPU and cache. E2E_SHARD=i/n runs
  # only the i-th of n parts, in one process.
  if [ -n "${E2E_SHARD:-}" ]; then
    shards=("${E2E_SHARD%/*}") total=${E2E_SHARD#*/}
  else
    total=${E2E_JOBS:-8}; shards=($(seq 0 $((total - 1))))
  fi
  logs=/tmp/fj/e2e-logs; mkdir -p $logs
  # `script` gives each a terminal, so the log is line-buffered and a shard
  # killed by its timeout still shows the test it was in.
  for i in "${shards[@]}"; do
    GTEST_SHARD_INDEX=$i GTEST_TOTAL_SHARDS=$total FMHAJIT_BINARY=/tmp/fj/fmhajit \
      script -qefc "timeout ${E2E_TIMEOUT:-560} /tmp/fj/fmhajit_e2e_tests --gtest_filter='$filter' --gtest_color=no" \
      "$logs/e2e-$i-of-$total.log" > /dev/null &
  done
  wait
  for i in "${shards[@]}"; do
    echo "== shard $i of $total"; grep -aE '^\[  (PASSED|FAILED) |^\[==========\]|FAILED|Failure|rror' "$logs/e2e-$i-of-$total.log" | tail -12
    grep -a '^\[ RUN' "$logs/e2e-$i-of-$total.log" | tail -1 # the last test begun
  done | tee "$out/e2e.log"
  tar -C $logs -czf "$out/e2e-logs.tar.gz" . # few files come back from a device call
fi
if [ "$mode" = dead-rows ]; then
  # After its e2e tables (above): fmhajit run --check of four decode kernels
  # with the option on, then decode rows timed with it off and on, in turns.
  ring='pack_gqa=1,pipeline=wgmma,bm=64,bn=128,warps=4,stages=2,target=sm_90a'
  while read -r fam rest; do
    echo "== check: $fam $rest"
    # shellcheck disable=SC2086 # $rest is a list of flags
    timeout 60 /tmp/fj/fmhajit run "family=$fam,dtype=bf16,d=128,$ring" $rest \
      --device cuda --check --iters 3 2>&1 | grep -E "^check|error"
  done <<'ROWS'
fwd_splitkv --heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 32768
fwd_splitkv --heads 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 8192
fwd_paged,mask=causal_br,lse=1 --heads 8 --heads-kv 2 --seqlen-q 2 --cache-len 1,40,3000 --page-size 16
fwd_splitkv,mask=causal_br --heads 64 --heads-kv 8 --seqlen-q 3 --seqlen-k 5000
ROWS
  while read -r parts rest; do
    for turn in 1 2; do for v in 0 1; do
      # shellcheck disable=SC2086
      t=$(FMHAJIT_DEAD_ROWS=$v timeout 60 /tmp/fj/fmhajit run "family=fwd_splitkv,dtype=bf16,d=128,$ring" $rest \
        --num-splits "$parts" --device cuda --iters 200 2>&1 | grep -E "^time|error" | head -1)
      echo "$rest, $parts parts, FMHAJIT_DEAD_ROWS=$v (turn $turn): $t"
    done; done
  done <<'ROWS' | tee "$out/dead-rows-times.txt"
64 --heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 131072
16 --heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 8192
8 --heads 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 8192
8 --heads 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 32768
1 --batch 8 --heads 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 4096
ROWS
  exit 0
fi
if [ "$mode" = api-overhead ]; then
  # Issue 15: api::run on a cached plan against cuLaunchKernel of the same
  # kernel, host time per call with launches queued on one stream (extra
  # flags go to fmhajit-bench-api: --quick, --target T).
  timeout 300 /tmp/fj/fmhajit-bench-api --device cuda --json "$out/bench-api-cuda.json" "$@" 2>&1 |
    tee "$out/api-overhead.log"
  exit 0
fi
if [ "$mode" = python ]; then
  # Issue 15: the module built for this machine's Python by
  # bench/gpu/pack-python.sh (carry dist-py): the pytest suite with PyTorch
  # on the GPU (SDPA, torch.compile, the current stream, gradients), then
  # bench_python.py (call cost, and fmhajit.attention against SDPA), after
  # fmhajit-bench-api --device cuda: api::run's own cost on this machine,
  # timed again before each round of the Python calls (--api-binary).
  mkdir -p /tmp/fj/python
  tar -C /tmp/fj/python -xJf "$root/dist-py/fmhajit-python.tar.xz"
  # The CLI the tests compare with, where the call carried one (carry is
  # 64 MiB: the module and fmhajit-bench-api alone fit; without the CLI its
  # comparisons skip).
  cli=
  if [ -f "$root/dist-py/fmhajit.xz" ]; then
    xz -dc "$root/dist-py/fmhajit.xz" > /tmp/fj/fmhajit-py && chmod +x /tmp/fj/fmhajit-py && cli=/tmp/fj/fmhajit-py
  fi
  # The module is built for Python 3.12 (ls /tmp/fj/python/fmhajit names its tag).
  python3 -c "import sys, numpy, pytest, torch; print('python', sys.version.split()[0], 'numpy',
    numpy.__version__, 'pytest', pytest.__version__, 'torch', torch.__version__)" 2>&1 | tee "$out/python-tests.log"
  PYTHONPATH=/tmp/fj/python timeout 600 env ${cli:+FMHAJIT_BINARY=$cli} python3 -m pytest -q -rs \
    -p no:cacheprovider "$root/tests/python" 2>&1 | tee -a "$out/python-tests.log" | tail -30
  api=
  if [ -f "$root/dist-py/fmhajit-bench-api.xz" ]; then
    xz -dc "$root/dist-py/fmhajit-bench-api.xz" > /tmp/fj/fmhajit-bench-api-py && chmod +x /tmp/fj/fmhajit-bench-api-py
    api=/tmp/fj/fmhajit-bench-api-py
    timeout 300 /tmp/fj/fmhajit-bench-api-py --device cuda --json "$out/bench-api-cuda.json" 2>&1 |
      tee "$out/api-overhead.log"
  fi
  PYTHONPATH=/tmp/fj/python PYTHONUNBUFFERED=1 timeout 600 python3 "$root/bench/gpu/bench_python.py" \
    --json "$out/bench-python-gpu.json" --api-json "$out/bench-api-cuda.json" \
    ${api:+--api-binary $api} "$@" 2>&1 | tee "$out/python-bench.log"
  exit 0
fi
if [ "$mode" = backward ]; then
  # The GPU backward (issue 16): a few CLI checks with bounded waits, then the
  # grid against PyTorch SDPA's FlashAttention-2 and cuDNN backward (extra
  # flags go to bench_backward.py).
  for spec in family=bwd_dq_dk_dv,dtype=bf16,d=128,mask=causal family=bwd_dq_dk_dv,dtype=fp16,d=64 \
      family=bwd_dq_dk_dv,dtype=bf16,d=128,deterministic=1,mask=causal_br \
      family=bwd_dq_dk_dv,dtype=bf16,d=128,bm=64,bn=128,warps=8,mask=causal \
      family=bwd_dq_dk_dv,dtype=fp16,d=64,bm=64,bn=128,warps=8,deterministic=1; do
    echo "== fmhajit run $spec" | tee -a "$out/backward-check.log"
    FMHAJIT_BOUNDED_WAITS=1 timeout 60 /tmp/fj/fmhajit run "$spec" --device cuda --check --iters 2 \
      --batch 2 --heads 4 --heads-kv 2 --seqlen-q 1000 --seqlen-k 1100 2>&1 | tee -a "$out/backward-check.log"
  done
  PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-1200}" python3 "$root/bench/gpu/bench_backward.py" --fmhajit /tmp/fj/fmhajit \
    --json "$out/bench-backward-gpu.json" "$@" 2>&1 | tee "$out/backward.log"
  exit 0
fi
if [ "$mode" = backward-host ]; then
  # The host CPU, not the GPU: extra flags go to bench_backward_host.py.
  PYTHONUNBUFFERED=1 timeout 1800 python3 "$root/bench/gpu/bench_backward_host.py" --fmhajit /tmp/fj/fmhajit \
    --json "$out/bench-backward-host.json" "$@" 2>&1 | tee "$out/backward-host.log"
  exit 0
fi
if [ "$mode" = decode ]; then
  # Issue 13's grid: PyTorch SDPA and a 1 GiB device copy first
  # (bench/decode/torch_decode.py), then fmhajit's plan against every
  # configuration it could pick, joined in one table. $GRID holds the grid's
  # flags, given to both (--heads, --batches, --lengths, --max-kv-mib); the
  # other arguments go to fmhajit-bench-decode (--tiles, --splits, ...).
  # shellcheck disable=SC2086 # $GRID is a list of flags
  PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-300}" python3 "$root/bench/decode/torch_decode.py" \
    --json "$out/torch-decode.json" ${GRID:-} 2>&1 | tee "$out/torch-decode.log"
  # shellcheck disable=SC2086
  timeout "${DECODE_TIMEOUT:-400}" /tmp/fj/fmhajit-bench-decode --device cuda --peers "$out/torch-decode.json" \
    --json "$out/bench-decode-gpu.json" ${GRID:-} "$@" 2>&1 | tee "$out/decode.log"
  exit 0
fi
if [ "$mode" = decode-host ]; then
  # The same grid on this machine's CPU: PyTorch's CPU SDPA and a host copy,
  # then fmhajit's plan on every core (fmhajit-bench-decode --grid).
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-300}" python3 "$root/bench/decode/torch_decode.py" --device cpu \
    --json "$out/torch-decode-cpu.json" ${GRID:-} 2>&1 | tee "$out/torch-decode-cpu.log"
  # shellcheck disable=SC2086
  timeout "${DECODE_TIMEOUT:-400}" /tmp/fj/fmhajit-bench-decode --grid --peers "$out/torch-decode-cpu.json" \
    --json "$out/bench-decode-host.json" ${GRID:-} "$@" 2>&1 | tee "$out/decode-host.log"
  exit 0
fi
if [ "$mode" = fp8 ]; then
  # fp8 on sm_90a: every feature checked against the float64 reference on
  # odd shapes with bounded waits (a wrong phase traps instead of hanging),
  # then the issue's fp8 rows timed beside the peers in bf16 (extra flags go
  # to bench.py).
  fj8() { echo "== fmhajit run $*" | tee -a "$out/fp8-check.log"
    FMHAJIT_BOUNDED_WAITS=1 timeout 60 /tmp/fj/fmhajit run "$@" --device cuda --check --iters 2 2>&1 | tee -a "$out/fp8-check.log"; }
  fj8 family=fwd,dtype=fp8_e4m3,d=128,target=sm_90a --batch 2 --heads 4 --seqlen-q 1000 --seqlen-k 1100
  fj8 family=fwd,dtype=fp8_e4m3,d=128,mask=causal,lse=1,target=sm_90a --batch 2 --heads 8 --heads-kv 2 --seqlen-q 777
  fj8 family=fwd,dtype=fp8_e4m3,d=64,mask=causal_br,lse=1,target=sm_90a --batch 3 --heads 6 --heads-kv 3 --seqlen-q 300 --seqlen-k 1301
  fj8 family=fwd,dtype=fp8_e4m3,d=256,mask=window,target=sm_90a --heads 4 --seqlen-q 900 --window 200,30
  fj8 family=fwd,dtype=fp8_e4m3,d=128,softcap=1,bias=alibi,target=sm_90a --heads 4 --seqlen-q 513 --softcap 20
  fj8 family=fwd,dtype=fp8_e5m2,d=128,lse=1,target=sm_90a --batch 2 --heads 4 --seqlen-q 640
  fj8 family=fwd,dtype=fp8_e4m3,out=fp16,d=96,dv=64,target=sm_90a --heads 2 --seqlen-q 333
  fj8 family=fwd_splitkv,dtype=fp8_e4m3,d=128,lse=1,target=sm_90a --heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 20000 --num-splits 6
  fj8 family=fwd,dtype=fp8_e4m3,d=128,v_pretranspose=1,mask=causal,lse=1,target=sm_90a --batch 2 --heads 8 --heads-kv 2 --seqlen-q 4100
  fj8 family=fwd,dtype=fp8_e4m3,d=256,v_pretranspose=1,mask=window,target=sm_90a --heads 4 --seqlen-q 900 --window 200,30
  grep -c "check    PASS" "$out/fp8-check.log" | sed 's/^/PASS lines: /'
  grep -c "check    FAIL\|^error" "$out/fp8-check.log" | sed 's/^/FAIL or error lines: /'
  PYTHONUNBUFFERED=1 timeout 400 python3 "$root/bench/gpu/bench.py" --fmhajit /tmp/fj/fmhajit --json "$out/bench-fp8.json" \
    --dtypes fp8_e4m3 --head-dims 64,128,256 --seqlens 2048,4096,8192,16384 "$@" 2>&1 | tee "$out/bench-fp8.log"
  exit 0
fi
if [ "$mode" = profile ]; then
  # Nsight Compute on fmhajit's kernel and cuDNN's for each "d,S,causal"
  # argument (bf16, 16k tokens, H*d = 2048), plus the SASS of fmhajit's
  # kernel, so a gap to the peer can be placed (docs/bench.md).
  ncu="/usr/local/cuda/bin/ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats"
  prof=/tmp/fj/profile; mkdir -p "$prof"
  for shape in "${@:-128,2048,0}"; do
    IFS=, read -r d s causal <<<"$shape"
    mask=none; flag=""; [ "$causal" = 1 ] && mask=causal && flag=--causal
    spec="family=fwd,dtype=bf16,d=$d,mask=$mask,target=sm_90a"
    tag="d${d}-s${s}-${mask}"
    echo "== $tag" | tee -a "$out/profile.log"
    timeout 120 $ncu --launch-skip 1 --launch-count 1 /tmp/fj/fmhajit run "$spec" --device cuda \
      --batch $((16384 / s)) --heads $((2048 / d)) --seqlen-q "$s" --iters 2 > "$prof/ncu-fmhajit-$tag.txt" 2>&1
    timeout 180 $ncu -k regex:'(?i)(fprop|fmha|flash|sdpa|attn)' --launch-count 1 python3 "$root/bench/gpu/sdpa_once.py" \
      --d "$d" --seqlen "$s" $flag > "$prof/ncu-cudnn-$tag.txt" 2>&1
    /tmp/fj/fmhajit compile "$spec" --emit asm > "/tmp/fj/$tag.ptx" 2>/dev/null &&
      /usr/local/cuda/bin/ptxas -arch=sm_90a "/tmp/fj/$tag.ptx" -o "/tmp/fj/$tag.cubin" &&
      /usr/local/cuda/bin/cuobjdump -sass "/tmp/fj/$tag.cubin" > "$prof/sass-$tag.txt"
  done
  grep -H "Duration\|Compute (SM) Throughput\|Issue Slots Busy\|No Eligible" "$prof"/ncu-*.txt | tee -a "$out/profile.log"
  tar -C "$prof" -cJf "$out/profile.tar.xz" .
  exit 0
fi
if [ "$mode" = stalls ]; then
  # Where a kernel's warps stall, instruction by instruction: Nsight
  # Compute's source counters on one `fmhajit run` (arguments: the spec and
  # run flags), summarized by bench/gpu/ncu_stalls.py (docs/bench.md).
  ncu=/usr/local/cuda/bin/ncu
  timeout 300 $ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --launch-skip 1 --launch-count 1 -o /tmp/fj/stalls \
    /tmp/fj/fmhajit run "$@" --device cuda --iters 2 > "$out/stalls-ncu.log" 2>&1
  $ncu --import /tmp/fj/stalls.ncu-rep --page source --csv --print-source sass > /tmp/fj/stalls.csv
  python3 "$root/bench/gpu/ncu_stalls.py" /tmp/fj/stalls.csv 40 | tee "$out/stalls.txt"
  xz -c /tmp/fj/stalls.csv > "$out/stalls-source.csv.xz"
  exit 0
fi
if [ "$mode" = sanitize ]; then
  # compute-sanitizer's memcheck, racecheck and synccheck on small problems
  # of each sm_90a pipeline (fp8's with its transposer warps, and with
  # v_pretranspose's pass) and on split tails, then the stages=2 kernels
  # with bounded waits.
  # Each line of sanitize.log that starts "== ERROR SUMMARY" must say 0.
  # SANITIZE=tails runs only the split tails' cases, SANITIZE=keys-as-rows
  # only the tiles with keys as the products' rows.
  cs=/usr/local/cuda/bin/compute-sanitizer
  only=${SANITIZE:-all}
  # `fmhajit run --check` of case $1 (a spec and its flags, one word) and
  # the problem's flags after it, under each of the tools.
  sanitized() {
    local case=$1; shift
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $case${FMHAJIT_TAIL_PARTS:+ (FMHAJIT_TAIL_PARTS=$FMHAJIT_TAIL_PARTS)}" |
        tee -a "$out/sanitize.log"
      # shellcheck disable=SC2086 # $case is a spec and its flags
      timeout 120 $cs --tool $tool --error-exitcode 9 /tmp/fj/fmhajit run $case --device cuda \
        "$@" --check --iters 1 2>&1 | grep -E "^check|^=========|error" | tee -a "$out/sanitize.log"
    done
  }
  # Keys as rows (bm under 64): the warps' exchange and P's two buffers in
  # shared memory, split-KV in three parts and paged in two.
  [ "$only" = all ] || [ "$only" = keys-as-rows ] && while read -r case; do
    sanitized "$case"
  done <<'CASES'
family=fwd_splitkv,dtype=bf16,d=128,mask=causal_br,lse=1,pack_gqa=1,pipeline=wgmma,bm=8,bn=128,warps=4,stages=2,target=sm_90a --heads 16 --heads-kv 2 --seqlen-q 1 --seqlen-k 1000 --num-splits 3
family=fwd_paged,dtype=bf16,d=128,softcap=1,bias=alibi,lse=1,pack_gqa=1,pipeline=wgmma,bm=16,bn=128,warps=4,stages=2,target=sm_90a --heads 8 --heads-kv 2 --seqlen-q 2 --cache-len 1,40,3000 --page-size 16 --num-splits 2
CASES
  [ "$only" = keys-as-rows ] && exit 0
  [ "$only" = tails ] || for case in "family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a" \
              "family=fwd,dtype=bf16,d=64,lse=1,target=sm_90a" \
              "family=fwd,dtype=fp16,d=256,mask=window,target=sm_90a --window 64,16" \
              "family=fwd,dtype=bf16,d=128,pipeline=wgmma,stages=1,target=sm_90a" \
              "family=fwd,dtype=bf16,d=128,pipeline=mma,target=sm_90a" \
              "family=fwd,dtype=fp8_e4m3,d=128,mask=causal,target=sm_90a" \
              "family=fwd,dtype=fp8_e4m3,d=128,v_pretranspose=1,target=sm_90a" \
              "family=fwd,dtype=fp8_e4m3,d=96,dv=64,mask=window,v_pretranspose=1,target=sm_90a --window 40,8"; do
    sanitized "$case" --heads 2 --seqlen-q 300 --seqlen-k 333
  done
  # Split tails (TailSplit.h): three forced parts, so that every item of the
  # small problem is split and the last part of each folds the others in.
  for case in "family=fwd,dtype=fp8_e4m3,d=128,bm=192,bn=96,warps=12,stages=2,v_pretranspose=1,lse=1,target=sm_90a" \
              "family=fwd,dtype=bf16,d=128,bm=128,bn=160,warps=8,stages=2,pipeline=wgmma,lse=1,target=sm_90a"; do
    FMHAJIT_TAIL_PARTS=3 sanitized "$case" --heads 2 --seqlen-q 500 --seqlen-k 700
  done
  [ "$only" = tails ] ||
  for spec in family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a family=fwd,dtype=bf16,d=64,target=sm_90a \
              family=fwd,dtype=bf16,d=256,softcap=1,target=sm_90a; do
    echo "== bounded waits $spec" | tee -a "$out/sanitize.log"
    FMHAJIT_BOUNDED_WAITS=1 timeout 120 /tmp/fj/fmhajit run "$spec" --device cuda --batch 2 --heads 16 \
      --seqlen-q 4000 --check --iters 3 2>&1 | tee -a "$out/sanitize.log"
  done
  exit 0
fi
if [ "$mode" != bench ] && [ "$mode" != grid ]; then
  for spec in family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a \
              family=fwd,dtype=fp16,d=64,pipeline=simt,lse=1,target=sm_90a; do
    /tmp/fj/fmhajit run "$spec" --device cuda --batch 2 --heads 4 --seqlen-q 1000 --check --iters 5 2>&1 | tee -a "$out/check.log"
  done
  # Every family `fmhajit run` takes, on the GPU through the public API.
  fj() { echo "== fmhajit run $*" | tee -a "$out/check.log"; /tmp/fj/fmhajit run "$@" --device cuda --check --iters 3 2>&1 | tee -a "$out/check.log"; }
  fj family=fwd_splitkv,dtype=bf16,d=128,lse=1 --heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 32768
  fj family=fwd_splitkv,dtype=bf16,d=128,lse=1 --heads 8 --heads-kv 1 --seqlen-q 1 --seqlen-k 4096 --num-splits 5
  fj family=fwd_paged,dtype=bf16,d=128,mask=causal_br,lse=1 --heads 8 --heads-kv 2 --seqlen-q 2 --cache-len 1,40,3000 --page-size 16
  fj family=fwd_paged,dtype=fp16,d=64 --batch 4 --heads 4 --seqlen-q 1 --cache-len 5000 --page-size 64 --num-splits 4
  fj family=append_kv,dtype=bf16,d=128 --heads 8 --heads-kv 2 --cache-len 0,15,33 --new-tokens 3 --page-size 16 --rotary half --rotate-q
  fj family=append_kv,dtype=fp16,d=64 --batch 2 --cache-len 7 --new-tokens 5 --rotary interleaved --rotary-dim 32
  grep -c "check    PASS" "$out/check.log" | sed 's/^/PASS lines: /'
  grep -c "check    FAIL\|^error" "$out/check.log" | sed 's/^/FAIL or error lines: /'
fi
if [ "$mode" = all ] || [ "$mode" = bench ] || [ "$mode" = quick ]; then
  q=""; [ "$mode" = quick ] && q=--quick
  PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/bench.py" --fmhajit /tmp/fj/fmhajit --json "$out/bench-gpu.json" $q "$@" 2>&1 | tee "$out/bench.log"
fi
if [ "$mode" = grid ]; then
  # Issue 12's table as the API runs it: the dispatched kernels beside SDPA's
  # FlashAttention-2 and cuDNN (bf16 and fp16, d = 64/128/256, S = 512-16384,
  # causal and not), then fp8 at d = 128 and 256 beside cuDNN's bf16.
  PYTHONUNBUFFERED=1 timeout "${GRID_TIMEOUT:-400}" python3 "$root/bench/gpu/bench.py" --fmhajit /tmp/fj/fmhajit \
    --json "$out/bench-grid.json" --dispatch --peers FLASH_ATTENTION,CUDNN_ATTENTION "$@" 2>&1 | tee "$out/grid.log"
  PYTHONUNBUFFERED=1 timeout "${FP8_TIMEOUT:-150}" python3 "$root/bench/gpu/bench.py" --fmhajit /tmp/fj/fmhajit \
    --json "$out/bench-grid-fp8.json" --dispatch --peers CUDNN_ATTENTION --dtypes fp8_e4m3 --head-dims 128,256 \
    --seqlens 2048,4096,8192,16384 "$@" 2>&1 | tee "$out/grid-fp8.log"
fi
if [ "$mode" = tune ]; then
  # Compare tiles of one pipeline ($PIPELINE, default auto): each argument is
  # a spec suffix, or D:SUFFIX to time head dim D only.
  for arg in "$@"; do
    d=0; tile=$arg
    case "$arg" in *:*) d=${arg%%:*}; tile=${arg#*:};; esac
    echo "== tile: ${tile:-default}, d=${d/#0/all}"
    PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/bench.py" --fmhajit /tmp/fj/fmhajit --json "$out/tune.json" \
      --dtypes bf16 --seqlens 2048,8192 --no-peers --pipeline "${PIPELINE:-auto}" --only-d "$d" \
      ${tile:+--tile "$tile"} 2>&1 | grep -v '^device\|^TFLOPS per'
  done
fi
