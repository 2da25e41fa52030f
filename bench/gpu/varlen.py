#!/usr/bin/env python3
"""Varlen prefill on the GPU: fmhajit's packed sequences (cu_seqlens) against
PyTorch SDPA on the same sequences as a nested (jagged) tensor, and the same
tokens as one dense batch where every length is equal. One run, CUDA events
for torch, `fmhajit run`'s own median for fmhajit.

Each row is a list of sequence lengths (queries = keys), heads and head dim;
fmhajit runs once per --tile (spec keys added to the dispatched spec, e.g.
"pipeline=wgmma,bm=128,bn=128,warps=8,stages=1" for the cp.async tile; ""
for what the dispatcher picks). TFLOPS count only the scores each sequence
has: 4 * H * d * sum(L^2), halved for causal.

Usage: python3 bench/gpu/varlen.py --fmhajit BIN [--tiles 'a;b'] [--json F]"""
import argparse
import json
import re
import subprocess

ROWS = [  # (label, lengths)
    ("8 x 2048", [2048] * 8),
    ("mixed 16k", [512, 4096, 1024, 3072, 256, 2048, 4096, 1280]),
    ("64 short", [64, 128, 192, 256, 320, 384, 448, 512] * 8),
    ("2 x 8192", [8192, 8192]),
]


def flops(lengths, heads, d, causal):
    total = 4 * heads * d * sum(n * n for n in lengths)
    return total / 2 if causal else total


def run_fmhajit(binary, dtype, d, heads, causal, lengths, tile, timeout):
    spec = "family=fwd,dtype=%s,d=%d,varlen=1,target=sm_90a%s%s" % (
        dtype, d, ",mask=causal" if causal else "", "," + tile if tile else "")
    lens = ",".join(map(str, lengths))
    cmd = [binary, "run", spec, "--device", "cuda", "--heads", str(heads),
           "--varlen-q", lens, "--varlen-k", lens, "--iters", "20"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, "timed out"
    if r.returncode:
        return None, None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    ms = float(re.search(r"^time\s+([0-9.]+) ms", r.stdout, re.M).group(1))
    kernel = re.search(r"^kernel\s+(\S+)", r.stdout, re.M)
    return ms, kernel.group(1) if kernel else None, None


def time_cuda(fn, iters=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def time_torch_nested(lengths, heads, d, causal, dtype):
    """SDPA on a jagged nested tensor [B, j, H, d] (its flash backend)."""
    import torch
    import torch.nn.functional as F
    total = sum(lengths)
    offsets = torch.tensor([0] + list(__import__("itertools").accumulate(lengths)),
                           device="cuda", dtype=torch.int64)
    def nested():
        values = torch.randn(total, heads, d, device="cuda", dtype=dtype)
        return torch.nested.nested_tensor_from_jagged(values, offsets).transpose(1, 2)
    q, k, v = nested(), nested(), nested()
    try:
        return time_cuda(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), None
    except (RuntimeError, NotImplementedError) as e:
        return None, str(e).splitlines()[0][:100]


def time_torch_dense(lengths, heads, d, causal, dtype, backend):
    """SDPA on one dense batch, where every length is equal."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if len(set(lengths)) != 1:
        return None, "lengths differ"
    shape = (len(lengths), heads, lengths[0], d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3))
    try:
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return time_cuda(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), None
    except RuntimeError as e:
        return None, str(e).splitlines()[0][:100]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fmhajit", required=True)
    p.add_argument("--tiles", default="", help="';'-separated spec keys per fmhajit run")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--head-dims", default="128")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--run-timeout", type=int, default=60)
    p.add_argument("--json")
    a = p.parse_args()
    import torch
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    tiles = a.tiles.split(";")
    print("device:", torch.cuda.get_device_name(), "| torch", torch.__version__)
    print("TFLOPS (ms); fmhajit tiles:", " | ".join(t or "dispatched" for t in tiles))
    rows = []
    for d in map(int, a.head_dims.split(",")):
        for causal in (False, True):
            for label, lengths in ROWS:
                f = flops(lengths, a.heads, d, causal)
                row = {"label": label, "lengths": lengths, "d": d, "causal": causal, "tiles": {}}
                cells = []
                for tile in tiles:
                    ms, kernel, err = run_fmhajit(a.fmhajit, a.dtype, d, a.heads, causal,
                                                  lengths, tile, a.run_timeout)
                    row["tiles"][tile or "dispatched"] = {"ms": ms, "kernel": kernel, "error": err}
                    cells.append("%6.1f (%.3f)" % (f / ms / 1e9, ms) if ms else "error: " + err)
                for name, (ms, err) in (
                        ("torch nested", time_torch_nested(lengths, a.heads, d, causal, dtype)),
                        ("cuDNN dense", time_torch_dense(lengths, a.heads, d, causal, dtype,
                                                         "CUDNN_ATTENTION"))):
                    row[name] = {"ms": ms, "error": err}
                    cells.append("%s %s" % (name, "%6.1f (%.3f)" % (f / ms / 1e9, ms) if ms else "-"))
                rows.append(row)
                print("d=%d %-6s %-10s | %s" % (d, "causal" if causal else "none", label,
                                                 " | ".join(cells)), flush=True)
    if a.json:
        with open(a.json, "w") as out:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
