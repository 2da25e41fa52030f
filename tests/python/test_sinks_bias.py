"""fmhajit.attention's sinks= (gpt-oss's attention sinks) and attn_bias=
(an elementwise bias, SDPA's float attn_mask) on NumPy arrays against the
float64 reference of conftest.py, and their refusals. PyTorch's are in
test_torch.py."""

import numpy as np
import pytest

import fmhajit
from conftest import assert_close, poisoned, random_qkv, reference


def sinks_for(rng, heads):
    """Sinks around the scores' size, one head without a sink (-inf) and
    one far above every score (its rows' out is almost 0)."""
    sinks = rng.uniform(-1.0, 3.0, heads)
    sinks[0] = -np.inf
    sinks[-1] = 30.0
    return sinks.astype(np.float32)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_sinks_causal_gqa(rng, dtype):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 37, 4, 64), (2, 45, 2, 64), dtype=dtype)
    sinks = sinks_for(rng, 4)
    out, lse = fmhajit.attention(q, k, v, causal=True, sinks=sinks, return_lse=True,
                                 out=poisoned((2, 37, 4, 64), dtype), threads=2)
    ref, ref_lse = reference(q64, k64, v64, causal=True, sinks=sinks)
    assert_close(out, ref, dtype, lse=lse, ref_lse=ref_lse)
    assert np.allclose(lse[:, 3], 30.0, atol=1e-3)  # the sink dominates


def test_sinks_are_run_time_values(rng):
    """Sinks (a list too) reach the kernels at each call: new values reuse
    the plan and give their own answer."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 20, 2, 64), (1, 33, 2, 64))
    fmhajit.attention(q, k, v, sinks=[0.0, 1.0], return_lse=True)
    kept = fmhajit.cached_plans()
    for sinks in ([2.0, -1.0], np.array([-np.inf, 5.0])):
        out, lse = fmhajit.attention(q, k, v, sinks=sinks, return_lse=True)
        ref, ref_lse = reference(q64, k64, v64, sinks=np.asarray(sinks))
        assert_close(out, ref, "fp32", lse=lse, ref_lse=ref_lse)
    assert fmhajit.cached_plans() == kept


def test_sinks_split_kv_decode(rng):
    """A decode shape's split-KV plan counts the sink once (in part 0)."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 1, 4, 128), (1, 3000, 1, 128),
                                            dtype="bf16")
    sinks = sinks_for(rng, 4)
    steps = fmhajit.plan(q, k, v, sinks=sinks, threads=8)["steps"]
    assert [s["role"] for s in steps] == ["split-KV forward", "combine"]
    out, lse = fmhajit.attention(q, k, v, sinks=sinks, threads=8, return_lse=True,
                                 out=poisoned((1, 1, 4, 128), "bf16"))
    ref, ref_lse = reference(q64, k64, v64, sinks=sinks)
    assert_close(out, ref, "bf16", lse=lse, ref_lse=ref_lse)


def key_padding(rng, batch, sk):
    """[batch, 1, 1, sk]: 0 on each sequence's keys, -inf on its padding."""
    lengths = rng.integers(sk // 2, sk, batch)
    bias = np.where(np.arange(sk)[None] < lengths[:, None], 0.0, -np.inf)
    return bias.reshape(batch, 1, 1, sk).astype(np.float32)


BIAS_SHAPES = {
    "shared": lambda rng, b, h, sq, sk: rng.standard_normal((1, 1, sq, sk)),
    "key_padding": lambda rng, b, h, sq, sk: key_padding(rng, b, sk),
    "full": lambda rng, b, h, sq, sk: rng.standard_normal((b, h, sq, sk)),
    "heads_rank3": lambda rng, b, h, sq, sk: rng.standard_normal((h, sq, sk)),
    "keys_rank1": lambda rng, b, h, sq, sk: rng.standard_normal(sk),
}


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("shape", list(BIAS_SHAPES))
def test_bias_broadcasts(rng, dtype, shape):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 29, 4, 64), (2, 41, 2, 64), dtype=dtype)
    bias = BIAS_SHAPES[shape](rng, 2, 4, 29, 41).astype(np.float32)
    out, lse = fmhajit.attention(q, k, v, causal=True, attn_bias=bias, return_lse=True,
                                 out=poisoned((2, 29, 4, 64), dtype), threads=2)
    ref, ref_lse = reference(q64, k64, v64, causal=True, bias=bias)
    assert_close(out, ref, dtype, lse=lse, ref_lse=ref_lse)


def test_bias_after_softcap_with_sinks(rng):
    """The bias joins the capped score (a -inf bias removes a key rather
    than being capped to -softcap), and sinks come on top."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 24, 4, 64), (2, 24, 2, 64), dtype="fp16")
    bias = key_padding(rng, 2, 24) + rng.standard_normal((1, 4, 24, 24)).astype(np.float32)
    sinks = sinks_for(rng, 4)
    out, lse = fmhajit.attention(q, k, v, softcap=2.0, scale=0.3, attn_bias=bias,
                                 sinks=sinks, return_lse=True, threads=2)
    ref, ref_lse = reference(q64, k64, v64, softcap=2.0, scale=0.3, bias=bias, sinks=sinks)
    assert_close(out, ref, "fp16", lse=lse, ref_lse=ref_lse)


def test_bias_strided_view(rng):
    """A bias stored [batch, seqlen_k, heads, seqlen_q] seen through a
    transpose: its strides go to BiasStrides, no copy."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 16, 2, 64), (2, 20, 2, 64))
    stored = rng.standard_normal((2, 20, 2, 16)).astype(np.float32)
    bias = stored.transpose(0, 2, 3, 1)
    assert not bias.flags.c_contiguous
    out = fmhajit.attention(q, k, v, attn_bias=bias, threads=2)
    assert_close(out, reference(q64, k64, v64, bias=bias)[0], "fp32")


def test_features_plan_apart(rng):
    """Regression: plans are kept per problem, and sinks, the bias and its
    strides are part of the problem (a plan made without a bias must not
    run a call with one, nor one with a bias a call without)."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 18, 2, 64), (1, 26, 2, 64))
    full = rng.standard_normal((1, 2, 18, 26)).astype(np.float32)
    calls = [{}, {"attn_bias": full}, {"attn_bias": full[:, :1]},
             {"sinks": [1.0, 2.0]}, {"attn_bias": full, "sinks": [1.0, 2.0]}, {}]
    for kw in calls:
        out = fmhajit.attention(q, k, v, threads=2, **kw)
        ref = reference(q64, k64, v64, bias=kw.get("attn_bias"), sinks=kw.get("sinks"))[0]
        assert_close(out, ref, "fp32")


@pytest.mark.parametrize("bias_shape", [(2, 3, 16, 20), (16, 21), (2, 1, 1, 16), (1, 2, 2, 16, 20)])
def test_bias_that_does_not_broadcast(rng, bias_shape):
    (q, k, v), _ = random_qkv(rng, (2, 16, 4, 64), (2, 20, 2, 64))
    bias = np.zeros(bias_shape, np.float32)
    error = TypeError if len(bias_shape) > 4 else ValueError  # DLPack import: at most 4 dims
    with pytest.raises(error) as e:
        fmhajit.attention(q, k, v, attn_bias=bias)
    if error is ValueError:
        assert str(e.value) == (
            f"attn_bias: shape {bias_shape} does not broadcast to [batch, heads_q, "
            f"seqlen_q, seqlen_k] = (2, 4, 16, 20): each dim must be that size or 1")


def test_refusals(rng):
    (q, k, v), _ = random_qkv(rng, (1, 16, 2, 64), (1, 16, 2, 64))
    bias = np.zeros((1, 1, 16, 16), np.float32)
    with pytest.raises(TypeError, match="attn_bias: dtype float16 is not supported; "
                                        "the bias is float32"):
        fmhajit.attention(q, k, v, attn_bias=bias.astype(np.float16))
    # The API's messages, unchanged (InvalidArgument: ValueError).
    with pytest.raises(ValueError, match="^bias and alibi are both set, and a kernel "
                                         "takes one of them"):
        fmhajit.attention(q, k, v, attn_bias=bias, alibi_slopes=[0.5, 0.25])
    with pytest.raises(ValueError, match=r"^sinks: expected 2 values \(one per query "
                                         r"head\); got 3"):
        fmhajit.attention(q, k, v, sinks=[0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match=r"^sinks: expected a 1-D float32 array"):
        fmhajit.attention(q, k, v, sinks=[[0.0, 1.0]])
    with pytest.raises(ValueError, match="^out overlaps attn_bias in memory"):
        big = np.zeros((1, 1, 16, 2 * 64), np.float32)
        fmhajit.attention(q, k, v, attn_bias=big[..., :16], out=big.reshape(1, 16, 2, 64))


def test_bias_with_varlen_is_refused_by_the_api(rng):
    """The API's Unsupported status (the kernels have no varlen bias layout
    yet) arrives as NotImplementedError, as every Unsupported does."""
    (q, k, v), _ = random_qkv(rng, (20, 2, 64), (20, 2, 64))
    cu = np.array([0, 8, 20], np.int32)
    with pytest.raises(NotImplementedError, match="^bias is not implemented with varlen"):
        fmhajit.attention(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu,
                          attn_bias=np.zeros((2, 1, 1, 12), np.float32))


def test_sinks_with_varlen(rng):
    cu_q, cu_k = [0, 5, 21], [0, 17, 40]
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (21, 4, 64), (40, 2, 64), dtype="bf16")
    sinks = sinks_for(rng, 4)
    out, lse = fmhajit.attention(q, k, v, cu_seqlens_q=np.array(cu_q, np.int32),
                                 cu_seqlens_k=np.array(cu_k, np.int32), causal=True,
                                 sinks=sinks, return_lse=True)
    ref, ref_lse = reference(q64, k64, v64, causal=True, cu_q=cu_q, cu_k=cu_k, sinks=sinks)
    assert_close(out, ref, "bf16", lse=lse, ref_lse=ref_lse)
