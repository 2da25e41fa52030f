#!/usr/bin/env python3
"""GPU forward benchmark: fmhajit against PyTorch SDPA's backends, side by side.

Runs on the GPU machine. The grid is the FlashAttention-3 paper's: 16k tokens
(B*S = 16384), H*d = 2048, S from 512 to 16384, d in {64, 128, 256}, causal and not,
bf16 and fp16. Peers, timed in this same run with CUDA events (median):
PyTorch SDPA with the FLASH_ATTENTION backend (FlashAttention-2),
CUDNN_ATTENTION and EFFICIENT_ATTENTION. fmhajit is timed by its own
`fmhajit run --device cuda` (CUDA events, median) on the same shapes.
Prints a table and writes JSON; every figure comes with its ratio to each peer.
"""
import argparse, json, os, re, subprocess, sys, tempfile

def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fmhajit", required=True)
    p.add_argument("--json", default="bench-gpu.json")
    p.add_argument("--target", default="sm_90a")
    p.add_argument("--quick", action="store_true", help="a few rows only")
    p.add_argument("--pipeline", default="auto",
                   help="comma-separated pipelines, each timed on every row (auto,mma,wgmma,...); "
                        "a '+' adds spec keys: wgmma+stages=2+bm=128")
    p.add_argument("--tile", default="", help="extra spec keys, e.g. bm=128,bn=64,warps=4")
    p.add_argument("--only-d", type=int, default=0, help="run only this head dim")
    p.add_argument("--head-dims", default="64,128,256")
    p.add_argument("--dtypes", default="bf16,fp16",
                   help="bf16, fp16, fp8_e4m3, fp8_e5m2 (fp8 rows time the peers in bf16)")
    p.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    p.add_argument("--no-peers", action="store_true", help="time fmhajit only")
    p.add_argument("--baseline-env", action="append", default=[], metavar="KEY=VALUE",
                   help="an environment variable for the baseline's runs only (repeatable); "
                        "with --baseline the same binary, it times a run-time setting")
    p.add_argument("--baseline", default="",
                   help="another fmhajit binary, timed on each row right after --fmhajit "
                        "(its first pipeline), as 'base'")
    p.add_argument("--run-timeout", type=int, default=90, help="seconds for one fmhajit run")
    p.add_argument("--masks", default="none,causal", help="none, causal or both")
    p.add_argument("--repeats", type=int, default=1,
                   help="time every implementation of a row this many times, in turns, "
                        "and report each one's median (peers' times at short lengths vary "
                        "by tens of percent from one measurement to the next)")
    p.add_argument("--dispatch", action="store_true",
                   help="run the tile the API's dispatcher picks for each row "
                        "(fmhajit plan), not the spec's arch default")
    p.add_argument("--peers", default="FLASH_ATTENTION,CUDNN_ATTENTION,EFFICIENT_ATTENTION",
                   help="the SDPA backends to time")
    return p.parse_args()

def grid(args):
    seqlens = [512, 2048] if args.quick else [int(s) for s in args.seqlens.split(",")]
    for dtype in (["bf16"] if args.quick else args.dtypes.split(",")):
        for causal in [m == "causal" for m in args.masks.split(",")]:
            for d in [int(x) for x in args.head_dims.split(",")]:
                for s in seqlens:
                    yield dict(dtype=dtype, causal=causal, d=d, seqlen=s,
                               batch=16384 // s, heads=2048 // d)

def flops(c):
    f = 4.0 * c["batch"] * c["heads"] * c["seqlen"] * c["seqlen"] * c["d"]
    return f / 2 if c["causal"] else f

def time_torch(c, backend_name):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    # fp8 rows time the peers in bf16, the yardstick (SDPA has no
    # fp8 forward).
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8_e4m3": torch.bfloat16,
          "fp8_e5m2": torch.bfloat16}[c["dtype"]]
    shape = (c["batch"], c["seqlen"], c["heads"], c["d"])  # BSHD, as fmhajit
    q, k, v = (torch.randn(shape, dtype=dt, device="cuda").transpose(1, 2) for _ in range(3))
    backend = getattr(SDPBackend, backend_name)
    fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c["causal"])
    try:
        with sdpa_kernel([backend]):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(20):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(); fn(); b.record(); torch.cuda.synchronize()
                times.append(a.elapsed_time(b))
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:120]
    times.sort()
    return times[len(times) // 2], None

def dispatched_tile(binary, target, c):
    """The pipeline and tile keys of the kernel `fmhajit plan` picks for row c
    (what the API and Python run), e.g. "pipeline=wgmma,bm=128,bn=160,warps=8,stages=2"."""
    cmd = [binary, "plan", "--dtype", c["dtype"], "--d", str(c["d"]),
           "--mask", "causal" if c["causal"] else "none", "--device", "cuda",
           "--target", target,
           "--batch", str(c["batch"]), "--heads", str(c["heads"]),
           "--seqlen-q", str(c["seqlen"])]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"^step 1\s+forward fmha_fwd_\S*_m(\d+)n(\d+)w(\d+)s(\d+)_([a-z]+)_", out, re.M)
    if not m:
        raise RuntimeError("no forward kernel in: " + " ".join(cmd) + "\n" + out)
    bm, bn, warps, stages, pipeline = m.groups()
    keys = "pipeline={},bm={},bn={},warps={},stages={}".format(pipeline, bm, bn, warps, stages)
    if "_vpt_" in m.group(0):  # V^T written by a pass before the kernel
        keys += ",v_pretranspose=1"
    return keys

def run_fmhajit(args, c, pipeline, cache_dir):
    # "wgmma+stages=2": a pipeline with spec keys of its own after the '+';
    # "base": the --baseline binary on the first pipeline
    binary, env = args.fmhajit, dict(os.environ)
    if pipeline == "base":
        binary, pipeline = args.baseline, args.pipeline.split(",")[0]
        env.update(kv.split("=", 1) for kv in args.baseline_env)
        cache_dir += "-base"
        os.makedirs(cache_dir, exist_ok=True)
    name, _, keys = pipeline.partition("+")
    spec = "family=fwd,dtype={},d={},mask={},pipeline={},target={}".format(
        c["dtype"], c["d"], "causal" if c["causal"] else "none", name, args.target)
    if keys:
        spec += "," + keys.replace("+", ",")
    if args.tile:
        spec += "," + args.tile
    if args.dispatch:
        spec = re.sub(r",pipeline=[^,]*", "", spec) + "," + dispatched_tile(binary, args.target, c)
    cmd = [binary, "run", spec, "--device", "cuda", "--batch", str(c["batch"]),
           "--heads", str(c["heads"]), "--seqlen-q", str(c["seqlen"]), "--iters", "20"]
    env["FMHAJIT_CACHE_DIR"] = cache_dir
    try:  # a hung kernel costs a row, not the run
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        return None, None, "timed out after %d s" % args.run_timeout
    if r.returncode != 0:
        return None, None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:160]
    ms = float(re.search(r"^time\s+([0-9.]+) ms", r.stdout, re.M).group(1))
    load = re.search(r"^load\s+(.*)$", r.stdout, re.M)
    return ms, load.group(1).strip() if load else None, None

def median(times):
    """The median of the times that were measured (None where none was)."""
    times = sorted(t for t in times if t)
    return times[len(times) // 2] if times else None

def main():
    args = parse_args()
    import torch
    print("device:", torch.cuda.get_device_name(), "| torch", torch.__version__, flush=True)
    peers = args.peers.split(",")
    rows = []
    cache_dir = tempfile.mkdtemp(prefix="fmhajit-bench-cache-")
    for c in grid(args):
        if args.only_d and c["d"] != args.only_d:
            continue
        row = dict(c)
        pipelines = args.pipeline.split(",") + (["base"] if args.baseline else [])
        samples = {name: [] for name in pipelines + peers}
        for _ in range(args.repeats):  # in turns, so drift reaches every side alike
            for pl in pipelines:
                ms, load, err = run_fmhajit(args, c, pl, cache_dir)
                samples[pl].append(ms)
                row[pl + "_load"], row[pl + "_error"] = load, err
            for p in peers:
                pms, perr = (None, "skipped") if args.no_peers else time_torch(c, p)
                samples[p].append(pms)
                row[p + "_error"] = perr
        for name in pipelines + peers:
            ms = median(samples[name])
            row[name + "_ms"], row[name + "_samples_ms"] = ms, samples[name]
            row[name + "_tflops"] = flops(c) / (ms * 1e9) if ms else None
        for p in peers:
            pms = row[p + "_ms"]
            for pl in pipelines:
                ms = row[pl + "_ms"]
                row[pl + "_vs_" + p] = (pms / ms) if (pms and ms) else None
        rows.append(row)
        fmt = lambda x: "%6.1f" % x if x else "     -"
        rat = lambda x: "%5.2fx" % x if x else "    - "
        ours = " ".join("%s %s (%s cuDNN)" % (pl, fmt(row[pl + "_tflops"]), rat(row.get(pl + "_vs_CUDNN_ATTENTION")))
                        for pl in pipelines)
        errs = "".join("  [%s: %s]" % (pl, row[pl + "_error"]) for pl in pipelines if row[pl + "_error"])
        print("%-8s %-6s d=%-3d S=%-5d B=%-2d H=%-2d | %s | FA2 %s cuDNN %s eff %s%s" % (
            c["dtype"], "causal" if c["causal"] else "full", c["d"], c["seqlen"], c["batch"], c["heads"],
            ours, fmt(row.get("FLASH_ATTENTION_tflops")), fmt(row.get("CUDNN_ATTENTION_tflops")),
            fmt(row.get("EFFICIENT_ATTENTION_tflops")), errs), flush=True)
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "target": args.target, "rows": rows}, f, indent=1)
    print("TFLOPS per pipeline; ratios are cuDNN time / fmhajit time: above 1 means fmhajit is faster")

if __name__ == "__main__":
    main()
