#!/usr/bin/env bash
# Dumps `fmhajit compile SPEC --emit asm` for a fixed set of specs into a
# directory, one file per spec, so that two builds can be compared with
# `diff -r`: a change meant to leave code generation alone must produce
# identical directories.
#
# The set: every kernel of every profile for every target, plus RANDOM
# seeded random specs that `fmhajit validate` accepts (non-default tiles,
# warps and features). Specs the compiler refuses leave their error text,
# and a crash leaves its exit status, so those are compared too.
#
#   scripts/asm-snapshot.sh BUILD/bin/fmhajit OUTDIR [RANDOM=300] [SEED=1]
#
# The specs compiled are written to OUTDIR/specs.txt; SPECS=FILE compiles
# the specs of FILE instead (a before/after pair should compile the same
# list, which the newer binary might otherwise validate differently).
set -euo pipefail
fmhajit=$(realpath "$1")
out=$2
random=${3:-300}
seed=${4:-1}
mkdir -p "$out"
specs=$(mktemp)
trap 'rm -f "$specs"' EXIT

if [ -n "${SPECS:-}" ]; then
  cp "$SPECS" "$specs"
else
targets=$(ls "$(dirname "$0")/../specs/arch" | sed 's/\.json$//' | grep -v '^host$')
profiles=$("$fmhajit" list | cut -d: -f1)
for t in $targets; do
  for p in $profiles; do
    "$fmhajit" list --profile "$p" --target "$t" | while read -r name; do
      "$fmhajit" decode "$name" | tr -d ' \n'; echo # the spec as one-line JSON
    done
  done
done >> "$specs"

set +o pipefail # head stops the generator early
python3 - "$seed" "$random" "$targets" <<'EOF' | while read -r s; do
import random, sys
rng = random.Random(int(sys.argv[1]))
targets = sys.argv[3].split()
pick = rng.choice
n = 0
while n < int(sys.argv[2]) * 4:
    n += 1
    keys = {
        "family": pick(["fwd", "fwd", "fwd_splitkv", "fwd_paged", "splitkv_combine", "append_kv"]),
        "dtype": pick(["fp32", "fp16", "bf16"]),
        "d": pick([32, 64, 80, 96, 128, 160, 192, 256]),
        "mask": pick(["none", "causal", "causal_br", "window"]),
        "bias": pick(["none", "alibi"]),
        "softcap": pick([0, 1]), "lse": pick([0, 1]),
        "bm": pick([16, 32, 48, 64, 96, 128, 192, 256]),
        "bn": pick([16, 32, 48, 64, 96, 128, 256]),
        "warps": pick([1, 2, 4, 8, 16]),
        "pipeline": pick(["auto", "simt", "mma", "mfma", "wmma", "vector"]),
        "target": pick(targets),
    }
    if rng.random() < 0.3:
        keys["dv"] = pick([32, 64, 128, 256])
    print(",".join(f"{k}={v}" for k, v in keys.items()))
EOF
  "$fmhajit" validate "$s" > /dev/null 2>&1 && echo "$s"
done | head -n "$random" >> "$specs"
set -o pipefail
fi
sort -u "$specs" > "$out/specs.txt"

# One spec: its asm, its error text, and its exit status when not 0.
compile_one() {
  local s=$1 name rc
  name=$("$fmhajit" name "$s" 2>/dev/null) || name="invalid-$(echo "$s" | md5sum | cut -c1-12)"
  rc=0
  "$fmhajit" compile "$s" --emit asm > "$out/$name.s" 2> "$out/$name.err" || rc=$?
  [ "$rc" -eq 0 ] || echo "$rc" > "$out/$name.rc"
}
export -f compile_one
export fmhajit out
xargs < "$out/specs.txt" -d '\n' -P "${JOBS:-2}" -I{} bash -c 'compile_one "$1"' _ {}
echo "$(ls "$out"/*.s | wc -l) specs in $out"
