"""fmhajit.attention on NumPy arrays against the float64 reference of
conftest.py: masks, GQA, varlen, softcap, ALiBi, LSE, fp32/fp16/bf16."""

import numpy as np
import pytest

import fmhajit
from conftest import assert_close, poisoned, random_qkv, reference


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_dtypes_gqa(rng, dtype):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 37, 4, 64), (2, 45, 2, 64), dtype=dtype)
    out = fmhajit.attention(q, k, v, threads=2)
    assert out.shape == (2, 37, 4, 64) and out.dtype == q.dtype
    assert_close(out, reference(q64, k64, v64)[0], dtype)


@pytest.mark.parametrize("sq,sk", [(33, 33), (20, 70)])
def test_causal_is_bottom_right(rng, sq, sk):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, sq, 2, 64), (1, sk, 2, 64))
    out, lse = fmhajit.attention(q, k, v, causal=True, return_lse=True,
                                 out=poisoned((1, sq, 2, 64), "fp32"))
    ref, ref_lse = reference(q64, k64, v64, causal=True)
    assert_close(out, ref, "fp32", lse=lse, ref_lse=ref_lse)


@pytest.mark.parametrize("window,causal", [((8, 3), False), ((5, -1), True), ((-1, 4), False)])
def test_window(rng, window, causal):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 40, 2, 64), (2, 50, 1, 64))
    out = fmhajit.attention(q, k, v, window=window, causal=causal)
    clipped = (window[0], 0) if causal else window
    assert_close(out, reference(q64, k64, v64, window=clipped)[0], "fp32")


def test_softcap_alibi_scale_lse(rng):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 29, 4, 64), (2, 31, 4, 64), dtype="fp16")
    slopes = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)
    out, lse = fmhajit.attention(q, k, v, softcap=5.0, alibi_slopes=slopes, scale=0.2,
                                 causal=True, return_lse=True)
    assert lse.shape == (2, 4, 29) and lse.dtype == np.float32
    ref, ref_lse = reference(q64, k64, v64, causal=True, softcap=5.0, slopes=slopes, scale=0.2)
    assert_close(out, ref, "fp16", lse=lse, ref_lse=ref_lse)


def test_varlen(rng):
    cu_q = [0, 5, 35, 36]
    cu_k = [0, 17, 50, 90]
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (36, 4, 64), (90, 2, 64), dv=32, dtype="bf16")
    out, lse = fmhajit.attention(q, k, v, cu_seqlens_q=np.array(cu_q, np.int32),
                                 cu_seqlens_k=cu_k, causal=True, return_lse=True)
    assert out.shape == (36, 4, 32) and lse.shape == (4, 36)
    ref, ref_lse = reference(q64, k64, v64, causal=True, cu_q=cu_q, cu_k=cu_k)
    assert_close(out, ref, "bf16", lse=lse, ref_lse=ref_lse)


def test_strided_views_and_fp32_out(rng):
    """A BHSD array seen as BSHD (a transposed view) runs without a copy,
    and a float32 out= takes fp16 inputs' output in fp32."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 3, 21, 64), (2, 3, 21, 64), dtype="fp16")
    qt, kt, vt = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    out = fmhajit.attention(qt, kt, vt, out=poisoned((2, 21, 3, 64), "fp32"))
    ref = reference(*(x.transpose(0, 2, 1, 3) for x in (q64, k64, v64)))[0]
    assert_close(out, ref, "fp16", out_dtype="fp32")


def test_plan_is_kept_per_problem(rng):
    (q, k, v), _ = random_qkv(rng, (1, 19, 2, 64), (1, 19, 2, 64))
    fmhajit.attention(q, k, v)
    kept = fmhajit.cached_plans()
    fmhajit.attention(q + 1, k, v)
    assert fmhajit.cached_plans() == kept
    fmhajit.attention(q, k, v, causal=True)
    assert fmhajit.cached_plans() == kept + 1


def test_ml_dtypes_bfloat16(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 16, 2, 64), (1, 16, 2, 64), dtype="bf16")
    bf = [x.view(ml_dtypes.bfloat16) for x in (q, k, v)]
    out = fmhajit.attention(*bf)
    assert out.dtype == ml_dtypes.bfloat16
    assert_close(out.view(np.uint16), reference(q64, k64, v64)[0], "bf16")


def test_threads_share_plans(rng):
    """Calls from several threads at once (the GIL is released while
    planning and running) each get their own problem's answer."""
    from concurrent.futures import ThreadPoolExecutor
    cases = [random_qkv(rng, (1, 10 + i, 2, 64), (1, 20 + i, 2, 64)) for i in range(4)]

    def run(case):
        (q, k, v), _ = case
        return [fmhajit.attention(q, k, v, causal=True, threads=1) for _ in range(3)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, cases * 2))
    for ((_, (q64, k64, v64)), outs) in zip(cases * 2, results):
        for out in outs:
            assert_close(out, reference(q64, k64, v64, causal=True)[0], "fp32")


def test_decode_runs_split_kv(rng):
    """A decode shape runs the plan's split-KV forward and combine."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 1, 4, 128), (1, 3000, 1, 128), dtype="bf16")
    steps = fmhajit.plan(q, k, v, causal=True, threads=8)["steps"]
    assert [s["role"] for s in steps] == ["split-KV forward", "combine"]
    out, lse = fmhajit.attention(q, k, v, causal=True, threads=8, return_lse=True,
                                 out=poisoned((1, 1, 4, 128), "bf16"))
    ref, ref_lse = reference(q64, k64, v64, causal=True)
    assert_close(out, ref, "bf16", lse=lse, ref_lse=ref_lse)
