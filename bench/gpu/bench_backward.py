#!/usr/bin/env python3
"""GPU backward benchmark: fmhajit's CUDA backward against PyTorch SDPA's backward.

Issue 16, Measure/H100. Grid: bf16 and fp16, d=64 and 128, S in 1k..16k with B*S = 16k
tokens, hidden 2048 (H = 2048/d), causal and not.

- fmhajit: `fmhajit run family=bwd_dq_dk_dv,... --device cuda`, which runs the forward
  once for O and LSE through the public API, then times api::backward alone with CUDA
  events (bwd_dot_do_o, bwd_dq_dk_dv and bwd_convert_dq; runtime/harness/RunTimer.cpp's
  rule: 3 warm-ups, then at least 10 calls and 200 ms). The default mode (dQ by fp32
  atomics) and deterministic=1 are separate columns, and each --tiles entry (spec keys
  such as bm=64,bn=128,warps=8, pinned on the bwd_dq_dk_dv kernel) one more atomic
  column, timed in the same run. We read its `time` line.
- PyTorch: scaled_dot_product_attention restricted to one backend (FLASH_ATTENTION:
  FlashAttention-2's kernels; CUDNN_ATTENTION), the forward once, then each timed call is
  torch.autograd.grad on the retained graph: the backward alone, CUDA events, median of
  --iters calls after warm-ups.

FLOPs by FlashAttention's convention: backward = 2.5 x forward, forward = 4*B*H*S^2*d,
halved for causal. Prints a table (TFLOPS and ratios peer time / fmhajit time: above 1,
fmhajit is faster) and writes JSON after every row.
"""
import argparse, json, os, re, subprocess, tempfile

PEERS = ["FLASH_ATTENTION", "CUDNN_ATTENTION"]

def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fmhajit", required=True)
    p.add_argument("--json", default="bench-backward-gpu.json")
    p.add_argument("--dtypes", default="bf16,fp16")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--seqlens", default="1024,2048,4096,8192,16384")
    p.add_argument("--tokens", type=int, default=16384, help="B * S")
    p.add_argument("--hidden", type=int, default=2048, help="H * d")
    p.add_argument("--iters", type=int, default=20, help="timed calls per peer")
    p.add_argument("--timeout", type=int, default=120, help="seconds per fmhajit process")
    p.add_argument("--no-peers", action="store_true", help="time fmhajit only")
    p.add_argument("--no-deterministic", action="store_true",
                   help="skip the deterministic=1 column")
    p.add_argument("--tiles", default="",
                   help="';'-separated spec keys, each one more fmhajit column with "
                        "them pinned, e.g. 'bm=64,bn=128,warps=8;bm=128,bn=128,warps=8'")
    return p.parse_args()

def grid(args):
    for dtype in args.dtypes.split(","):
        for d in [int(x) for x in args.dims.split(",")]:
            for causal in [False, True]:
                for s in [int(x) for x in args.seqlens.split(",")]:
                    yield dict(dtype=dtype, d=d, causal=causal, seqlen=s,
                               batch=max(1, args.tokens // s), heads=args.hidden // d)

def backward_flops(c):
    fwd = 4.0 * c["batch"] * c["heads"] * c["seqlen"] * c["seqlen"] * c["d"]
    return 2.5 * (fwd / 2 if c["causal"] else fwd)

def run_fmhajit(args, c, deterministic, cache_dir, tile=""):
    """(median ms, error) of the backward from `fmhajit run --device cuda`."""
    spec = "family=bwd_dq_dk_dv,dtype={},d={},mask={}{}{}".format(
        c["dtype"], c["d"], "causal" if c["causal"] else "none",
        ",deterministic=1" if deterministic else "", "," + tile if tile else "")
    cmd = [args.fmhajit, "run", spec, "--device", "cuda", "--batch", str(c["batch"]),
           "--heads", str(c["heads"]), "--seqlen-q", str(c["seqlen"])]
    env = dict(os.environ, FMHAJIT_CACHE_DIR=cache_dir)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % args.timeout
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:160]
    m = re.search(r"^time\s+([0-9.]+) ms", r.stdout, re.M)
    if not m:
        return None, "no time line in: " + r.stdout.strip()[-160:]
    return float(m.group(1)), None

def time_torch(args, c, backend):
    """(median ms, error) of SDPA's backward on one backend."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[c["dtype"]]
    shape = (c["batch"], c["seqlen"], c["heads"], c["d"])  # BSHD in memory, as fmhajit's
    mk = lambda: torch.randn(shape, dtype=dt, device="cuda").transpose(1, 2)
    q, k, v = (mk().requires_grad_() for _ in range(3))
    grad_out = mk()
    try:
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c["causal"])
            backward = lambda: torch.autograd.grad(out, (q, k, v), grad_out, retain_graph=True)
            for _ in range(3):
                backward()
            times = []
            for _ in range(args.iters):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                backward()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:160]
    finally:
        del q, k, v, grad_out
        torch.cuda.empty_cache()
    return sorted(times)[len(times) // 2], None

def tiles_of(args):
    return [t.strip() for t in args.tiles.split(";") if t.strip()]

def measure(args, c, cache_dir):
    row = dict(c)
    f = backward_flops(c)
    sides = [("fmhajit", lambda: run_fmhajit(args, c, False, cache_dir))]
    if not args.no_deterministic:
        sides.append(("fmhajit_det", lambda: run_fmhajit(args, c, True, cache_dir)))
    for tile in tiles_of(args):
        sides.append(("fmhajit_" + tile, lambda t=tile: run_fmhajit(args, c, False, cache_dir, t)))
    if not args.no_peers:
        sides += [(b.lower(), lambda b=b: time_torch(args, c, b)) for b in PEERS]
    for name, timer in sides:
        ms, err = timer()
        row[name + "_ms"], row[name + "_error"] = ms, err
        row[name + "_tflops"] = f / (ms * 1e9) if ms else None
    for peer in PEERS:
        p, ours = row.get(peer.lower() + "_ms"), row["fmhajit_ms"]
        row["vs_" + peer.lower()] = p / ours if p and ours else None
    return row

def print_row(args, row):
    fmt = lambda x: "%7.1f" % x if x else "      -"
    rat = lambda x: "%6.2fx" % x if x else "     - "
    errs = "".join("  [%s: %s]" % (k[:-6], v) for k, v in row.items()
                   if k.endswith("_error") and v)
    tiles = "".join(" %s" % fmt(row.get("fmhajit_" + t + "_tflops")) for t in tiles_of(args))
    print("%-4s d=%-3d %-6s S=%-5d B=%-2d H=%-2d | %s %s%s | %s %s | %s %s%s" % (
        row["dtype"], row["d"], "causal" if row["causal"] else "full", row["seqlen"],
        row["batch"], row["heads"], fmt(row["fmhajit_tflops"]), fmt(row.get("fmhajit_det_tflops")),
        tiles, fmt(row.get("flash_attention_tflops")), fmt(row.get("cudnn_attention_tflops")),
        rat(row.get("vs_flash_attention")), rat(row.get("vs_cudnn_attention")), errs), flush=True)

def main():
    args = parse_args()
    info = {"torch": None, "gpu": None}
    if not args.no_peers:
        import torch
        info["torch"], info["gpu"] = torch.__version__, torch.cuda.get_device_name()
    print("GPU backward | %s | torch %s" % (info["gpu"], info["torch"]))
    tiles = "".join(" %7s" % ("t%d" % (i + 1)) for i in range(len(tiles_of(args))))
    for i, t in enumerate(tiles_of(args)):
        print("t%d: fmhajit with %s pinned (dQ by atomics)" % (i + 1, t))
    print("%-40s | %7s %7s%s | %7s %7s | %7s %7s" % (
        "row", "fmhajit", "det=1", tiles, "FA2", "cuDNN", "vs FA2", "vs cuDNN"))
    cache_dir = tempfile.mkdtemp(prefix="fmhajit-bench-bwd-gpu-")
    rows = []
    for c in grid(args):
        rows.append(measure(args, c, cache_dir))
        print_row(args, rows[-1])
        with open(args.json, "w") as f:
            json.dump(dict(info, rows=rows), f, indent=1)
    print("TFLOPS of the backward (2.5 x forward); ratios = peer time / fmhajit time: "
          "above 1 means fmhajit is faster")

if __name__ == "__main__":
    main()
