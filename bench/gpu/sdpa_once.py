#!/usr/bin/env python3
"""Runs one PyTorch SDPA backend on one shape a few times, for a profiler.

`ncu ... python3 sdpa_once.py --backend CUDNN_ATTENTION --d 128 --seqlen 2048`
profiles the peer's kernel on the shape `fmhajit run` is profiled on
(bench/gpu/run.sh profile). BSHD inputs, as bench.py times them.
"""
import argparse
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

p = argparse.ArgumentParser()
p.add_argument("--backend", default="CUDNN_ATTENTION")
p.add_argument("--dtype", default="bf16")
p.add_argument("--d", type=int, default=128)
p.add_argument("--seqlen", type=int, default=2048)
p.add_argument("--batch", type=int, default=0, help="default: 16384 / seqlen")
p.add_argument("--heads", type=int, default=0, help="default: 2048 / d")
p.add_argument("--causal", action="store_true")
p.add_argument("--iters", type=int, default=3)
a = p.parse_args()
dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
shape = (a.batch or 16384 // a.seqlen, a.seqlen, a.heads or 2048 // a.d, a.d)
q, k, v = (torch.randn(shape, dtype=dt, device="cuda").transpose(1, 2) for _ in range(3))
torch.cuda.synchronize()
with sdpa_kernel([getattr(SDPBackend, a.backend)]):
    for _ in range(a.iters):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a.causal)
torch.cuda.synchronize()
