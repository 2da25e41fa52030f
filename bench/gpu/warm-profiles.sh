#!/usr/bin/env bash
# Each profile's warm-up on the GPU machine, then plans from what it left:
# `fmhajit cache warm --profile P --target sm_90a --load` into fresh fmhajit
# and driver caches (its codegen and its driver loads, each timed by the
# command), the two caches' sizes, then `fmhajit plan --device cuda --load`
# of plans that profile serves, each a new process on those caches: every
# step's load line should say `disk` with a driver step of about a
# millisecond. A plan's wall clock includes its CUDA context (about 0.2 s).
#   bash bench/gpu/warm-profiles.sh FMHAJIT_BINARY [PROFILE ...]
# (default: decode training dispatch; prefill has plans too).
set -uo pipefail
fj=${1:?usage: warm-profiles.sh FMHAJIT_BINARY [PROFILE ...]}
shift
profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(decode training dispatch)
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1-3 /proc/loadavg)"
root=$(mktemp -d)
export CUDA_CACHE_MAXSIZE=4294967296 # the driver's largest: nothing warmed is evicted
# Plans each profile serves, one per line.
plans_of() {
  case $1 in
  decode) cat <<'PLANS' ;;
--heads 8 --heads-kv 1 --seqlen-k 131072
--heads 8 --heads-kv 1 --page-size 16 --cache-len 131072
--batch 64 --heads 32 --heads-kv 8 --seqlen-k 4096
--heads 32 --heads-kv 8 --seqlen-q 2 --seqlen-k 4096
--heads 8 --heads-kv 1 --seqlen-q 2 --page-size 16 --cache-len 32768
--batch 8 --heads 64 --heads-kv 8 --seqlen-k 32768 --d 64
--batch 64 --heads 32 --seqlen-k 4096
PLANS
  training) cat <<'PLANS' ;;
--batch 2 --heads 16 --seqlen-q 4096 --mask causal --lse
--batch 2 --heads 16 --seqlen-q 4096 --mask causal --backward
--batch 2 --heads 16 --seqlen-q 4096 --backward --deterministic
--batch 2 --heads 16 --seqlen-q 2048 --d 64 --dtype fp16 --backward
PLANS
  prefill) cat <<'PLANS' ;;
--batch 4 --heads 16 --seqlen-q 4096 --dtype fp8_e4m3 --lse
--batch 4 --heads 16 --seqlen-q 4096 --d 96 --mask window --window 512,0
--batch 2 --heads 16 --d 192 --dv 128 --seqlen-q 4096 --mask causal --lse
--batch 3 --heads 16 --varlen-q 100,1000,4000 --varlen-k 100,1000,4000 --mask causal --lse
PLANS
  dispatch) cat <<'PLANS' ;;
--batch 4 --heads 16 --seqlen-q 4096
--batch 4 --heads 16 --seqlen-q 4096 --d 256 --mask causal
PLANS
  esac
}
for p in "${profiles[@]}"; do
  export FMHAJIT_CACHE_DIR=$root/$p/fmhajit CUDA_CACHE_PATH=$root/$p/driver
  echo "== warm $p"
  timeout 900 "$fj" cache warm --profile "$p" --target sm_90a --load 2>&1 | tail -4
  echo "caches: fmhajit $(du -sm "$FMHAJIT_CACHE_DIR" | cut -f1) MB, driver $(du -sm "$CUDA_CACHE_PATH" | cut -f1) MB"
  while read -r flags; do
    [ -n "$flags" ] || continue
    echo "-- plan $flags"
    # shellcheck disable=SC2086 # $flags is a list of flags
    timeout 120 "$fj" plan --device cuda --load $flags 2>&1 | grep -E '^step|^  load|^planned|^error'
  done < <(plans_of "$p")
done
rm -rf "$root"
