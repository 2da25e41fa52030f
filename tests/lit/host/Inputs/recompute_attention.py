#!/usr/bin/env python3
"""Recomputes forward attention from a `fmhajit run --save DIR` bundle alone.

Reads q.npy, k.npy, v.npy, o.npy (and lse.npy and bias.npy when present) and
meta.json, evaluates softmax(score) V in float64 with the mask, softcap, ALiBi,
elementwise bias, sink, dropout and GQA
rules of runtime/numerics/AttentionProblem.h (dropout's keep-mask from
meta.json's p, seed and offset through Philox4x32-10, written here from
docs/families.md#dropout), and compares with the saved outputs at
the tolerance of the output dtype (runtime/numerics/Tolerance.cpp). Pure Python, so
it needs no NumPy: the bundle's promise is that any tool can do this.

usage: recompute_attention.py DIR    (exit 0 and "MATCH", or 1 and "MISMATCH")
"""
import ast
import json
import math
import os
import struct
import sys

# (relative L2, max abs / max |ref|, lse relative), as in Tolerance.cpp.
TOLERANCES = {"fp32": (2e-5, 1e-4, 1e-5), "fp16": (2e-3, 4e-3, 1e-5),
              "bf16": (1e-2, 2e-2, 1e-5)}


MASK32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    """Random123's philox4x32_R(10, counter, key) on Python ints."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & MASK32)
        k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
    return c0, c1, c2, c3


# One of Random123's known-answer vectors (tests/unit/DropoutTest.cpp's).
assert philox4x32_10((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
                     (0xa4093822, 0x299f31d0)) == (0xd16cfe09, 0x94fdcceb,
                                                   0x5001e420, 0x24126ea1)


class Dropout:
    """The keep-mask of meta.json's "dropout": P_ij kept (and scaled by
    1 / (1 - p)) iff Philox((j / 4, i, b * heads_q + h, offset), seed)[j % 4]
    >= min(floor(p * 2^32), 2^32 - 1); p is the float32 the kernel got."""

    def __init__(self, dropout, heads_q):
        self.heads_q, self.offset = heads_q, dropout["offset"]
        seed = dropout["seed"]
        self.key = (seed & MASK32, seed >> 32)
        self.threshold = min(math.floor(dropout["p"] * 2.0 ** 32), MASK32)
        self.scale = 1.0 / (1.0 - dropout["p"])

    def factor(self, b, h, i, j):
        """keep / (1 - p) for P_ij of query head h in sequence b."""
        counter = (j >> 2, i, b * self.heads_q + h, self.offset)
        r = philox4x32_10(counter, self.key)[j & 3]
        return self.scale if r >= self.threshold else 0.0


def read_npy(path):
    """Returns (shape, flat list of floats) of a little-endian float32 .npy."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(path + ": not a .npy file")
    major = data[6]
    if major == 1:
        (length,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (length,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + length].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise ValueError(path + ": expected C-order <f4, got " + str(header))
    shape = tuple(header["shape"])
    count = 1
    for dim in shape:
        count *= dim
    body = data[start + length:]
    return shape, list(struct.unpack("<%df" % count, body[:4 * count]))


def sequences(meta, q_shape, k_shape):
    """(first q row, first k row, sq, sk) per sequence, in packed rows."""
    cu_q, cu_k = meta["cu_seqlens_q"], meta["cu_seqlens_k"]
    if cu_q is not None:
        return [(cu_q[b], cu_k[b], cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b])
                for b in range(len(cu_q) - 1)]
    batch, sq, sk = q_shape[0], q_shape[1], k_shape[1]
    return [(b * sq, b * sk, sq, sk) for b in range(batch)]


def visible(meta, i, j, sq, sk):
    diag = i + sk - sq
    mask = meta["mask"]
    if mask == "causal":
        return j <= i
    if mask == "causal_br":
        return j <= diag
    if mask == "window":
        left, right = meta["window_left"], meta["window_right"]
        return (left < 0 or j >= diag - left) and (right < 0 or j <= diag + right)
    return True


def attention_row(meta, t, i, h, b, seq, dims):
    """Returns (o row, lse) of query i of head h in sequence b (rows seq)."""
    q, k, v = t["q"], t["k"], t["v"]
    hq, hkv, d, dv = dims
    first_q, first_k, sq, sk = seq
    hk = h // (hq // hkv)
    qrow = q[((first_q + i) * hq + h) * d:][:d]
    scores = []
    for j in range(sk):
        if not visible(meta, i, j, sq, sk):
            continue
        krow = k[((first_k + j) * hkv + hk) * d:][:d]
        s = meta["scale"] * math.fsum(a * b for a, b in zip(qrow, krow))
        if meta["softcap"]:
            s = meta["softcap"] * math.tanh(s / meta["softcap"])
        if meta["alibi_slopes"] is not None:
            s -= meta["alibi_slopes"][h] * abs(i + sk - sq - j)
        if "bias" in t:  # [batch, heads_q, sq, sk], after the softcap
            s += t["bias"][((b * hq + h) * sq + i) * sk + j]
        if s != -math.inf:  # a -inf bias removes the key
            scores.append((j, s))
    # A sink is a logit in the max and the sum, with no value row.
    sink = meta.get("sinks") and meta["sinks"][h]
    if not scores and sink is None:
        return [0.0] * dv, -math.inf
    top = max([s for _, s in scores] + ([sink] if sink is not None else []))
    weights = [(j, math.exp(s - top)) for j, s in scores]
    total = math.fsum([w for _, w in weights] +
                      ([math.exp(sink - top)] if sink is not None else []))
    out = [0.0] * dv
    dropout = t.get("dropout")
    for j, w in weights:
        if dropout is not None:  # after the sum: the LSE is dropout's input
            w *= dropout.factor(b, h, i, j)
        vrow = v[((first_k + j) * hkv + hk) * dv:][:dv]
        for c in range(dv):
            out[c] += w * vrow[c]
    return [x / total for x in out], top + math.log(total)


def main(bundle):
    with open(os.path.join(bundle, "meta.json")) as f:
        meta = json.load(f)
    shapes, t = {}, {}
    for name in ("q", "k", "v", "o"):
        shapes[name], t[name] = read_npy(os.path.join(bundle, name + ".npy"))
    has_lse = os.path.exists(os.path.join(bundle, "lse.npy"))
    if has_lse:
        shapes["lse"], t["lse"] = read_npy(os.path.join(bundle, "lse.npy"))
    if os.path.exists(os.path.join(bundle, "bias.npy")):
        shapes["bias"], t["bias"] = read_npy(os.path.join(bundle, "bias.npy"))
    hq, hkv = meta["heads_q"], meta["heads_kv"]
    if meta.get("dropout") is not None:
        t["dropout"] = Dropout(meta["dropout"], hq)
    dims = (hq, hkv, shapes["q"][-1], shapes["v"][-1])
    varlen = meta["cu_seqlens_q"] is not None
    total_q = shapes["q"][0] if varlen else shapes["q"][0] * shapes["q"][1]
    diff_sq = ref_sq = max_abs = ref_max = lse_rel = 0.0
    bad_inf = empty_rows = 0
    for b, seq in enumerate(sequences(meta, shapes["q"], shapes["k"])):
        for h in range(hq):
            for i in range(seq[2]):
                ref, ref_lse = attention_row(meta, t, i, h, b, seq, dims)
                row = (seq[0] + i) * hq + h
                got = t["o"][row * dims[3]:][:dims[3]]
                for x, r in zip(got, ref):
                    diff_sq += (x - r) ** 2
                    ref_sq += r * r
                    max_abs = max(max_abs, abs(x - r))
                    ref_max = max(ref_max, abs(r))
                if ref_lse == -math.inf:
                    empty_rows += 1
                    bad_inf += any(x != 0.0 for x in got)
                if not has_lse:
                    continue
                idx = h * total_q + seq[0] + i if varlen else (b * hq + h) * seq[2] + i
                got_lse = t["lse"][idx]
                if ref_lse == -math.inf or not math.isfinite(got_lse):
                    bad_inf += got_lse != ref_lse
                else:
                    lse_rel = max(lse_rel, abs(got_lse - ref_lse) / max(1.0, abs(ref_lse)))
    rel_l2 = math.sqrt(diff_sq / ref_sq) if ref_sq else math.sqrt(diff_sq)
    rel_max = max_abs / ref_max if ref_max else max_abs
    tol = TOLERANCES[meta["dtype"]]
    ok = rel_l2 <= tol[0] and rel_max <= tol[1] and lse_rel <= tol[2] and not bad_inf
    print("recomputed %s: rel_l2 %.3g max_abs %.3g lse_max_rel %.3g empty_rows %d"
          % (meta["name"], rel_l2, rel_max, lse_rel, empty_rows))
    print("MATCH" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
