#!/usr/bin/env python3
"""PyTorch's side of fmhajit-bench-decode --device cuda (docs/bench.md).

Runs on the GPU machine, in the same call as the C++ bench (or, with
--device cpu, on its CPU beside fmhajit-bench-decode --grid), and writes JSON
that the bench joins to its rows (--peers):
  - copy_gbps: a device-to-device copy of a 1 GiB buffer (dst.copy_(src)),
    bytes read plus bytes written over the time, the best of three batches;
  - paged_gather (GPU): the same through a block table of 16-token pages
    (paged_gather_gbps), pages in order and shuffled, for each Hkv;
  - for every decode row of the grid (the same flags and defaults as the
    bench), the time per call (the median of three batches of --reps
    back-to-back calls, as the bench times fmhajit) of torch.nn.functional.scaled_dot_product_attention
    with enable_gqa=True under each backend that accepts it (FlashAttention-2,
    cuDNN, memory-efficient, math), and the best of them.
Q is [batch, Hq, Sq, d] (Sq = 1, or --seqlens-q: speculative decode, every
query seeing every key) and K/V [batch, Hkv, Sk, d] (BHSD, torch's own
layout), bf16. SDPA has no paged K/V: the bench compares its paged rows with
this contiguous time. Like the bench, successive runs read different copies
of K/V (up to 8, in a 1 GiB pool per tensor; 256 MiB on the CPU) so that
small rows are not served from the 50 MB L2 (or the CPU's caches).

Mixed rows (--mixed BATCH:MIN-MAX, the bench's flag): BATCH sequences whose
key lengths are drawn from [MIN, MAX] by the bench's generator
(mixed_lengths). SDPA takes no per-sequence key lengths with GQA, so a user
has two ways, both timed, and the row's best is the faster:
  - padded: K/V padded to the longest sequence, a boolean key-padding
    attn_mask [batch, 1, Sq, longest], each backend that accepts a mask
    (it reads the padding too);
  - per_sequence: one SDPA call per sequence (best backend), back to back
    (one launch per sequence).
"""
import argparse, json, sys

KV_POOL_BYTES = 1 << 30
CPU_POOL_BYTES = 256 << 20  # as fmhajit-bench-decode --grid --max-kv-mib 512


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--json", default="torch-decode.json")
    p.add_argument("--heads", default="32/8,64/8,8/1")
    p.add_argument("--batches", default="1,8,64")
    p.add_argument("--lengths", default="1024,4096,8192,32768,131072")
    p.add_argument("--seqlens-q", default="1",
                   help="query tokens per sequence (2-8: speculative decode)")
    p.add_argument("--max-kv-mib", type=int, default=1024)
    p.add_argument("--mixed", default="",
                   help="rows of mixed lengths BATCH:MIN-MAX,... (as the bench)")
    p.add_argument("--mixed-only", action="store_true")
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: PyTorch's CPU SDPA and a host memory copy, "
                        "timed by the wall clock (median call)")
    return p.parse_args()


def mixed_lengths(batch, lo, hi):
    """The bench's keyLengths (bench/decode/DecodeRunner.cpp): a 64-bit LCG
    seeded with the batch, each length lo + (x >> 33) % (hi - lo + 1)."""
    x, out = batch, []
    for _ in range(batch):
        x = (x * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
        out.append(lo + (x >> 33) % (hi - lo + 1))
    return out


def mixed_grid(args):
    """(hq, hkv, batch, lo, hi, sq, lengths) of each --mixed row."""
    for hs in args.heads.split(","):
        hq, hkv = (int(x) for x in hs.split("/"))
        for sq in (int(x) for x in args.seqlens_q.split(",")):
            for item in filter(None, args.mixed.split(",")):
                b, rng = item.split(":")
                lo, hi = (int(x) for x in rng.split("-"))
                lens = mixed_lengths(int(b), lo, hi)
                if 2 * sum(lens) * hkv * args.d * 2 <= args.max_kv_mib << 20:
                    yield hq, hkv, int(b), lo, hi, sq, lens


def grid(args):
    for hs in args.heads.split(","):
        hq, hkv = (int(x) for x in hs.split("/"))
        for sq in (int(x) for x in args.seqlens_q.split(",")):
            for b in ([] if args.mixed_only else (int(x) for x in args.batches.split(","))):
                for sk in (int(x) for x in args.lengths.split(",")):
                    kv = 2 * b * sk * hkv * args.d * 2
                    if kv <= args.max_kv_mib << 20:
                        yield hq, hkv, b, sk, sq, kv


def timed_cpu(fn, reps):
    """ms per call on the CPU: the sorted wall-clock times of `reps` calls."""
    import time
    times = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times


def timed(torch, fn, reps, batches=3):
    """ms per call: the sorted means of `batches` batches of `reps`
    back-to-back calls between two events (as the bench times fmhajit)."""
    means = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record(); torch.cuda.synchronize()
        means.append(a.elapsed_time(b) / reps)
    means.sort()
    return means


def copy_gbps(torch, device):
    src = torch.ones(KV_POOL_BYTES, dtype=torch.uint8, device=device)
    dst = torch.zeros_like(src)
    dst.copy_(src)
    if device == "cpu":
        best = timed_cpu(lambda: dst.copy_(src), 5)[0]
        return 2 * KV_POOL_BYTES / (best * 1e-3) / 1e9
    torch.cuda.synchronize()
    best = timed(torch, lambda: dst.copy_(src), 5)[0]
    return 2 * KV_POOL_BYTES / (best * 1e-3) / 1e9


def paged_gather_gbps(torch, hkv, d, page=16, pool_bytes=512 << 20):
    """The copy through a block table: index_select of a pool of `page`-token
    pages [pages, page, hkv, d] (bf16) into a contiguous tensor, bytes read
    plus written over the time, pages in order and shuffled. What memory
    gives a paged read, beside copy_gbps's plain copy."""
    pages = pool_bytes // (page * hkv * d * 2)
    pool = torch.randn(pages, page, hkv, d, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(pool)
    out = {"heads_kv": hkv, "page_size": page}
    for order, table in (("in_order", torch.arange(pages, device="cuda")),
                         ("shuffled", torch.randperm(pages, device="cuda"))):
        fn = lambda: torch.index_select(pool, 0, table, out=dst)
        fn(); torch.cuda.synchronize()
        best = timed(torch, fn, 5)[0]
        out[order + "_gbps"] = 2 * pool.numel() * 2 / (best * 1e-3) / 1e9
    del pool, dst
    torch.cuda.empty_cache()
    return out


def main():
    args = parse_args()
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    backends = ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH"]
    dev = args.device
    name = torch.cuda.get_device_name() if dev == "cuda" else "cpu, %d threads" % torch.get_num_threads()
    out = {"device": name, "torch": torch.__version__,
           "copy_gbps": copy_gbps(torch, dev), "rows": []}
    print("torch %s on %s: device copy %.0f GB/s" % (out["torch"], out["device"], out["copy_gbps"]), flush=True)
    if dev == "cuda":
        out["paged_gather"] = [paged_gather_gbps(torch, hkv, args.d) for hkv in
                               sorted({int(h.split("/")[1]) for h in args.heads.split(",")})]
        for g in out["paged_gather"]:
            print("copy through a table of 16-token pages, Hkv=%d: in order %.0f GB/s, shuffled %.0f GB/s"
                  % (g["heads_kv"], g["in_order_gbps"], g["shuffled_gbps"]), flush=True)
    for hq, hkv, b, sk, sq, kv in grid(args):
        pool = KV_POOL_BYTES if dev == "cuda" else CPU_POOL_BYTES
        copies = max(1, min(8, pool // (kv // 2)))
        q = torch.randn(b, hq, sq, args.d, dtype=torch.bfloat16, device=dev)
        k0 = torch.randn(b, hkv, sk, args.d, dtype=torch.bfloat16, device=dev)
        v0 = torch.randn_like(k0)
        ks = [k0] + [k0.clone() for _ in range(copies - 1)]  # other memory,
        vs = [v0] + [v0.clone() for _ in range(copies - 1)]  # same values
        row = {"heads_q": hq, "heads_kv": hkv, "batch": b, "seqlen_k": sk, "seqlen_q": sq,
               "kv_bytes": kv}
        best = None
        for name in backends:
            if name == "MATH" and kv > (256 << 20) and dev == "cuda":
                row[name + "_ms"] = None  # materializes the scores: slow, and never the best
                continue
            i = [0]
            def fn():
                j = i[0] % copies; i[0] += 1
                return F.scaled_dot_product_attention(q, ks[j], vs[j], enable_gqa=True)
            try:
                with sdpa_kernel([getattr(SDPBackend, name)]):
                    for _ in range(3 if dev == "cuda" else 1):
                        fn()
                    if dev == "cpu":
                        t = timed_cpu(fn, args.reps)
                        ms = t[len(t) // 2]
                    else:
                        torch.cuda.synchronize()
                        ms = timed(torch, fn, args.reps)[1]  # the median batch
            except RuntimeError as e:
                ms = None
                row[name + "_error"] = str(e).splitlines()[0][:100]
            row[name + "_ms"] = ms
            if ms is not None and (best is None or ms < best[1]):
                best = (name, ms)
        row["best_backend"], row["best_ms"] = best if best else (None, None)
        out["rows"].append(row)
        print("%2d/%d b=%-2d Sk=%-6d Sq=%d %-20s %s" % (hq, hkv, b, sk, sq, row["best_backend"],
              "%.4f ms" % row["best_ms"] if best else "-"), flush=True)
        del ks, vs, k0, v0
        if dev == "cuda":
            torch.cuda.empty_cache()
    for hq, hkv, b, lo, hi, sq, lens in mixed_grid(args):
        out["rows"].append(time_mixed(torch, F, SDPBackend, sdpa_kernel, backends,
                                      args, hq, hkv, b, lo, hi, sq, lens))
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


def time_mixed(torch, F, SDPBackend, sdpa_kernel, backends, args, hq, hkv, b,
               lo, hi, sq, lens):
    """A mixed row: padded + key-padding mask under each backend, and one
    call per sequence; best_ms is the faster way."""
    dev, d, longest = args.device, args.d, max(lens)
    row = {"heads_q": hq, "heads_kv": hkv, "batch": b, "seqlen_k": hi,
           "seqlen_q": sq, "mixed_min": lo, "kv_bytes": 2 * sum(lens) * hkv * d * 2}
    q = torch.randn(b, hq, sq, d, dtype=torch.bfloat16, device=dev)
    k = torch.randn(b, hkv, longest, d, dtype=torch.bfloat16, device=dev)
    v = torch.randn_like(k)
    keep = torch.arange(longest, device=dev)[None, :] < torch.tensor(lens, device=dev)[:, None]
    mask = keep[:, None, None, :].expand(b, 1, sq, longest)
    ks = [k[i:i + 1, :, :n] for i, n in enumerate(lens)]
    vs = [v[i:i + 1, :, :n] for i, n in enumerate(lens)]
    best = None

    def run(name, fn):
        nonlocal best
        try:
            with sdpa_kernel([getattr(SDPBackend, name)]):
                fn()
                if dev == "cpu":
                    t = timed_cpu(fn, args.reps)
                    ms = t[len(t) // 2]
                else:
                    torch.cuda.synchronize()
                    ms = timed(torch, fn, args.reps)[1]
        except RuntimeError as e:
            return None, str(e).splitlines()[0][:100]
        return ms, None

    for name in backends:
        if name == "MATH":
            continue  # materializes [b, hq, sq, longest] scores: never the best
        ms, err = run(name, lambda: F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=True))
        row["padded_" + name + "_ms"] = ms
        if err:
            row["padded_" + name + "_error"] = err
        if ms is not None and (best is None or ms < best[1]):
            best = ("padded " + name, ms)
    per_best = None
    for name in backends[:2]:  # FlashAttention-2, cuDNN: no mask needed
        ms, err = run(name, lambda: [F.scaled_dot_product_attention(
            q[i:i + 1], ks[i], vs[i], enable_gqa=True) for i in range(b)])
        row["per_sequence_" + name + "_ms"] = ms
        if ms is not None and (per_best is None or ms < per_best[1]):
            per_best = ("per-sequence " + name, ms)
    if per_best and (best is None or per_best[1] < best[1]):
        best = per_best
    row["best_backend"], row["best_ms"] = best if best else (None, None)
    print("%2d/%d b=%-2d Sk=%d-%d Sq=%d %-28s %s" % (hq, hkv, b, lo, hi, sq, row["best_backend"],
          "%.4f ms" % row["best_ms"] if best else "-"), flush=True)
    return row


if __name__ == "__main__":
    main()
