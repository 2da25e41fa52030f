"""Shared helpers of the Python tests: a float64 reference written here,
the comparison against fmhajit's own tolerance table, and fresh inputs."""

import os
import zlib

import numpy as np
import pytest

import fmhajit

# NumPy's dtype for each fmhajit dtype; bf16 travels as uint16 bits.
DTYPES = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}


def cli_binary():
    """The fmhajit command line the tests compare with (ctest sets
    FMHAJIT_BINARY). A GPU run that carries only the module skips them."""
    path = os.environ.get("FMHAJIT_BINARY")
    if not path:
        pytest.skip("FMHAJIT_BINARY is not set: no fmhajit command line to compare with")
    return path


def to_dtype(x, dtype):
    """float64 values rounded to dtype, as fmhajit reads them."""
    if dtype == "bf16":
        return fmhajit.to_bf16(x)
    return x.astype(DTYPES[dtype])


def as_float64(x, dtype):
    """What an array of dtype holds (bf16: as uint16 bits), as float64."""
    if dtype == "bf16" and x.dtype == np.uint16:
        return fmhajit.from_bf16(x).astype(np.float64)
    return x.astype(np.float64)


class Variant:
    """A variant's math for the reference, written in the test (never read
    from the variant's source): score_mod(s, b, h, q, k) returns the new
    scores and mask_mod(b, h, q, k) which keys are visible, both on NumPy
    arrays that broadcast to [heads_q, seqlen_q, seqlen_k] (h, q, k are
    index arrays; q and k count from each sequence's start, b is the
    sequence)."""

    def __init__(self, score_mod=None, mask_mod=None):
        self.score_mod = score_mod
        self.mask_mod = mask_mod


def reference_sequence(q, k, v, causal, window, softcap, slopes, scale,
                       sinks=None, bias=None, variant=None, seq=0):
    """One sequence: q [Sq, Hq, d], k [Sk, Hkv, d], v [Sk, Hkv, dv], all
    float64; sinks [Hq] (a logit per query head in the softmax's
    denominator, with no value row) and bias [Hq, Sq, Sk] (added after the
    softcap, before the mask) or None. variant: a Variant (score_mod after
    the bias, mask_mod ANDed with the mask) for sequence number seq.
    Returns out [Sq, Hq, dv] and lse [Hq, Sq]."""
    sq, hq, _ = q.shape
    sk, hkv, _ = k.shape
    group = hq // hkv
    kk = np.repeat(k, group, axis=1)  # query head h reads K/V head h // group
    vv = np.repeat(v, group, axis=1)
    s = scale * np.einsum("ihd,jhd->hij", q, kk)
    if softcap:
        s = softcap * np.tanh(s / softcap)
    diag = np.arange(sq)[:, None] + sk - sq  # bottom-right aligned
    j = np.arange(sk)[None, :]
    if slopes is not None:
        s = s - np.asarray(slopes, np.float64)[:, None, None] * np.abs(diag - j)
    if bias is not None:
        s = s + bias
    h, i = np.arange(hq)[:, None, None], np.arange(sq)[None, :, None]
    if variant is not None and variant.score_mod is not None:
        s = variant.score_mod(s, seq, h, i, j[None])
    keep = np.ones((sq, sk), bool)
    if causal:
        keep &= j <= diag
    if window is not None:
        left, right = window
        if left >= 0:
            keep &= j >= diag - left
        if right >= 0:
            keep &= j <= diag + right
    keep = keep[None]
    if variant is not None and variant.mask_mod is not None:
        keep = keep & variant.mask_mod(seq, h, i, j[None])
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    sink = np.full((hq, 1, 1), -np.inf)
    if sinks is not None:
        sink = np.asarray(sinks, np.float64).reshape(hq, 1, 1)
        m = np.maximum(m, sink)
    p = np.exp(s - m)
    total = p.sum(axis=-1, keepdims=True) + np.exp(sink - m)
    lse = np.log(total[..., 0]) + m[..., 0]
    out = np.einsum("hij,jhd->ihd", p / total, vv)
    return out, lse


def reference(q, k, v, causal=False, window=None, softcap=0.0, slopes=None,
              scale=None, cu_q=None, cu_k=None, sinks=None, bias=None,
              variant=None):
    """float64 attention of float64 arrays in fmhajit's layouts; bias is
    broadcast to [batch, heads_q, seqlen_q, seqlen_k] as NumPy does;
    variant is a Variant or None."""
    scale = scale if scale is not None else 1.0 / np.sqrt(q.shape[-1])
    args = (causal, window, softcap, slopes, scale, sinks)
    if cu_q is None:
        if bias is not None:
            full = (q.shape[0], q.shape[2], q.shape[1], k.shape[1])
            bias = np.broadcast_to(np.asarray(bias, np.float64), full)
        parts = [reference_sequence(q[b], k[b], v[b], *args,
                                    None if bias is None else bias[b], variant, b)
                 for b in range(q.shape[0])]
        return np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts])
    outs, lses = [], []
    for b in range(len(cu_q) - 1):
        o, l = reference_sequence(q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]],
                                  v[cu_k[b]:cu_k[b + 1]], *args, None, variant, b)
        outs.append(o)
        lses.append(l)
    return np.concatenate(outs), np.concatenate(lses, axis=1)


def assert_close(out, ref, dtype, out_dtype=None, lse=None, ref_lse=None):
    """fmhajit's accuracy for dtype (fmhajit.tolerance: the table the C++
    tests use), relative to the reference's scale."""
    tol = fmhajit.tolerance(dtype, out_dtype)
    got = as_float64(out, out_dtype or dtype)
    assert np.isfinite(got).all(), "an output element was not written"
    err = got - ref
    rel_l2 = np.linalg.norm(err) / np.linalg.norm(ref)
    max_abs = np.abs(err).max() / np.abs(ref).max()
    assert rel_l2 <= tol["rel_l2"], f"rel_l2 {rel_l2:.3g} > {tol['rel_l2']}"
    assert max_abs <= tol["max_abs"], f"max_abs {max_abs:.3g} > {tol['max_abs']}"
    if lse is not None:
        lse_err = np.abs(lse - ref_lse) / np.maximum(1.0, np.abs(ref_lse))
        assert lse_err.max() <= tol["lse_rel"], f"lse {lse_err.max():.3g}"


@pytest.fixture
def rng(request):
    """A generator seeded per test, so a failure reproduces."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def random_qkv(rng, shape_q, shape_k, dv=None, dtype="fp32"):
    """Fresh random q, k, v rounded to dtype, and their float64 values."""
    shape_v = tuple(shape_k[:-1]) + (dv or shape_k[-1],)
    arrays = [to_dtype(rng.standard_normal(s), dtype) for s in (shape_q, shape_k, shape_v)]
    return arrays, [as_float64(a, dtype) for a in arrays]


def poisoned(shape, dtype):
    """An output filled with NaN, so that an element left unwritten fails."""
    if dtype == "bf16":
        return np.full(shape, 0x7FC0, np.uint16)
    return np.full(shape, np.nan, DTYPES[dtype])
