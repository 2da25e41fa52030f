#!/usr/bin/env python3
"""Host backward benchmark: fmhajit's CPU backward against PyTorch's CPU SDPA backward.

Runs on the GPU machine's CPU (issue 16, Measure/Host). Grid: fp32 and bf16, d=128,
causal and not, S in {512, 1024, 2048}, B=1 and H=16 at every S, each on 1 and 16
threads. Sixteen heads because PyTorch's CPU flash backward splits its work over
batch x heads only (one parallel_for over B*H): fewer would idle its threads.

- fmhajit: `fmhajit run family=bwd_dq_dk_dv,... --threads N`, which runs the forward
  once for O and LSE, then times the backward alone: its two kernels bwd_dot_do_o
  (D = rowsum(dO*O)) and bwd_dq_dk_dv, wall clock, after one untimed call. We read
  its `time` line. `fmhajit run` runs the spec as given, so the schedule of
  bwd_dq_dk_dv (docs/design.md, "The backward (host)": key and query items, or head
  items, head_items=1) comes from --schedule: `plan` (the default) asks `fmhajit plan
  --backward` for the row's problem and threads and runs the schedule it prints;
  `split` and `heads` force one (for A/B runs). Each row records the spec it ran.
- PyTorch: scaled_dot_product_attention on the CPU, restricted to its fused
  FLASH_ATTENTION backend (what CPU dispatch picks for these inputs anyway;
  --torch-backend MATH for the unfused one), torch.set_num_threads(N). The forward runs
  once; each timed call is torch.autograd.grad on the retained graph, so only the
  backward is timed; one warm-up call first.

Both sides keep the median of their timed calls and take as many by the same rule:
fmhajit's own for the host (runtime/harness/RunTimer.cpp: at least 3 calls and at
least 200 ms of them), or exactly --iters calls each when given, so neither side is
sampled more thinly than the other.

FLOPs by FlashAttention's convention for both: backward = 2.5 x forward, forward =
4*B*H*S^2*d, halved for causal. Prints a table and writes JSON (as bench.py).
"""
import argparse, json, os, platform, re, subprocess, tempfile, time

def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fmhajit", required=True)
    p.add_argument("--json", default="bench-backward-host.json")
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--seqlens", default="512,1024,2048")
    p.add_argument("--heads", type=int, default=16, help="H at every S (B = 1)")
    p.add_argument("--threads", default="1,16")
    p.add_argument("--iters", type=int, default=0,
                   help="timed backward calls per side (0: at least 3 and 200 ms, fmhajit's rule)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per fmhajit process")
    p.add_argument("--torch-backend", default="FLASH_ATTENTION", help="an SDPBackend name")
    p.add_argument("--no-peers", action="store_true", help="time fmhajit only (no PyTorch needed)")
    p.add_argument("--schedule", default="plan", choices=["plan", "split", "heads"],
                   help="bwd_dq_dk_dv's host schedule: the plan's choice, key and query items "
                        "(head_items=0) or head items (head_items=1)")
    return p.parse_args()

def grid(args):
    for dtype in args.dtypes.split(","):
        for causal in [False, True]:
            for s in [int(x) for x in args.seqlens.split(",")]:
                for threads in [int(t) for t in args.threads.split(",")]:
                    yield dict(dtype=dtype, causal=causal, d=args.d, seqlen=s, batch=1,
                               heads=args.heads, threads=threads)

def backward_flops(c):
    fwd = 4.0 * c["batch"] * c["heads"] * c["seqlen"] * c["seqlen"] * c["d"]
    return 2.5 * (fwd / 2 if c["causal"] else fwd)

def problem_flags(c):
    return ["--batch", str(c["batch"]), "--heads", str(c["heads"]),
            "--seqlen-q", str(c["seqlen"]), "--threads", str(c["threads"])]

def schedule_keys(args, c):
    """The row's head_items (and, from the plan, its tile) as spec keys:
    --schedule's, or what `fmhajit plan --backward` picks (head items or not,
    and the grad kernel's bm, bn: bf16 on AMX tiles takes bn=256)."""
    if args.schedule != "plan":
        return "head_items=%d" % (args.schedule == "heads")
    cmd = [args.fmhajit, "plan", "--backward", "--dtype", c["dtype"], "--d", str(c["d"])]
    cmd += (["--mask", "causal"] if c["causal"] else []) + problem_flags(c)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    keys = "head_items=%d" % (r.returncode == 0 and "schedule: head items" in r.stdout)
    tile = re.search(r"bwd_dq_dk_dv fmha_bwddqdkdv_\S*_m(\d+)n(\d+)w", r.stdout)
    return keys + (",bm=%s,bn=%s" % tile.groups() if tile else "")

def run_fmhajit(args, c, cache_dir):
    """(median ms, timed calls, error, spec) of the backward from `fmhajit run`."""
    spec = "family=bwd_dq_dk_dv,dtype={},d={},mask={},{},target=host".format(
        c["dtype"], c["d"], "causal" if c["causal"] else "none", schedule_keys(args, c))
    cmd = [args.fmhajit, "run", spec] + problem_flags(c)
    if args.iters:
        cmd += ["--iters", str(args.iters)]
    # A cache of our own: the first row of each spec pays the compile, outside the timing.
    env = dict(os.environ, FMHAJIT_CACHE_DIR=cache_dir)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, 0, "timed out after %d s" % args.timeout, spec
    if r.returncode != 0:
        return None, 0, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:160], spec
    m = re.search(r"^time\s+([0-9.]+) ms \(median of (\d+), (\d+) threads?\)", r.stdout, re.M)
    if not m:
        return None, 0, "no time line in: " + r.stdout.strip()[-160:], spec
    if int(m.group(3)) != c["threads"]:  # fmhajit says how many threads it used
        return None, 0, "ran on %s threads, not %d" % (m.group(3), c["threads"]), spec
    return float(m.group(1)), int(m.group(2)), None, spec

def enough(args, times, start):
    """Whether the timed calls suffice: exactly --iters, else fmhajit's host rule."""
    if args.iters:
        return len(times) >= args.iters
    return len(times) >= 3 and time.perf_counter() - start >= 0.2

def time_torch(args, c):
    """(median ms, timed calls, error) of PyTorch's CPU SDPA backward."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.set_num_threads(c["threads"])
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[c["dtype"]]
    shape = (c["batch"], c["seqlen"], c["heads"], c["d"])  # BSHD in memory, as fmhajit's
    # transpose(1, 2): SDPA wants (B, H, S, d); the views are leaves we take gradients of.
    q, k, v = (torch.randn(shape, dtype=dt).transpose(1, 2).requires_grad_() for _ in range(3))
    grad_out = torch.randn(shape, dtype=dt).transpose(1, 2)
    try:
        with sdpa_kernel([getattr(SDPBackend, args.torch_backend)]):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c["causal"])
        backward = lambda: torch.autograd.grad(out, (q, k, v), grad_out, retain_graph=True)
        backward()  # warm-up: first-call allocations and thread-pool start
        times, start = [], time.perf_counter()
        while not enough(args, times, start):
            t0 = time.perf_counter()
            backward()  # synchronous on the CPU: the wall clock is the backward's time
            times.append((time.perf_counter() - t0) * 1e3)
    except RuntimeError as e:
        return None, 0, str(e).splitlines()[0][:160]
    # The upper middle for an even count, as fmhajit's nth_element median.
    return sorted(times)[len(times) // 2], len(times), None

def measure(args, c, cache_dir):
    """One table row: both sides' times, GFLOPS and the ratio."""
    row = dict(c)
    # Let the previous row's PyTorch OpenMP workers stop spin-waiting (KMP_BLOCKTIME,
    # GOMP_SPINCOUNT) before fmhajit's threads want the same cores.
    time.sleep(0.5)
    (row["fmhajit_ms"], row["fmhajit_runs"], row["fmhajit_error"],
     row["fmhajit_spec"]) = run_fmhajit(args, c, cache_dir)
    row["torch_ms"], row["torch_runs"], row["torch_error"] = (
        (None, 0, "skipped") if args.no_peers else time_torch(args, c))
    f = backward_flops(c)
    row["fmhajit_gflops"] = f / (row["fmhajit_ms"] * 1e6) if row["fmhajit_ms"] else None
    row["torch_gflops"] = f / (row["torch_ms"] * 1e6) if row["torch_ms"] else None
    # torch time / fmhajit time = fmhajit GFLOPS / torch GFLOPS: above 1, fmhajit is faster.
    row["fmhajit_vs_torch"] = (row["torch_ms"] / row["fmhajit_ms"]
                               if row["torch_ms"] and row["fmhajit_ms"] else None)
    return row

def print_row(row):
    fmt = lambda x: "%8.1f" % x if x else "       -"
    rat = lambda x: "%6.2fx" % x if x else "     - "
    errs = "".join("  [%s: %s]" % (side, row[side + "_error"]) for side in ("fmhajit", "torch")
                   if row[side + "_error"] and row[side + "_error"] != "skipped")
    print("%-4s %-6s d=%-3d S=%-5d B=%d H=%-2d T=%-2d %-5s | %s | %s | %s%s" % (
        row["dtype"], "causal" if row["causal"] else "full", row["d"], row["seqlen"], row["batch"],
        row["heads"], row["threads"], "heads" if "head_items=1" in row["fmhajit_spec"] else "split",
        fmt(row["fmhajit_gflops"]), fmt(row["torch_gflops"]),
        rat(row["fmhajit_vs_torch"]), errs), flush=True)

def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M).group(1).strip()
    except (OSError, AttributeError):
        return platform.machine()

def main():
    args = parse_args()
    info = {"cpu": cpu_name(), "cpus": os.cpu_count(),
            "torch": None, "torch_backend": None if args.no_peers else args.torch_backend}
    if not args.no_peers:
        import torch
        info["torch"] = torch.__version__
    print("host backward | %s, %s cpus | torch %s (%s)" % (info["cpu"], info["cpus"], info["torch"], info["torch_backend"]))
    print("%-46s | %8s | %8s | %7s" % ("row (T = threads, schedule)", "fmhajit", "torch", "ratio"))
    cache_dir = tempfile.mkdtemp(prefix="fmhajit-bench-bwd-cache-")
    rows = []
    for c in grid(args):
        rows.append(measure(args, c, cache_dir))
        print_row(rows[-1])
        # After every row: a run cut off by the device's time limit still leaves its rows.
        with open(args.json, "w") as f:
            json.dump(dict(info, d=args.d, iters=args.iters, schedule=args.schedule, rows=rows),
                      f, indent=1)
    print("GFLOPS of the backward (2.5 x forward); ratio = torch time / fmhajit time: above 1 means fmhajit is faster")

if __name__ == "__main__":
    main()
