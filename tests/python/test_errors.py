"""Bad input raises ValueError or TypeError with one clear message; where the
C++ API decides, the message is the API's (the CLI prints the same lines)."""

import subprocess

import numpy as np
import pytest

import fmhajit
from conftest import cli_binary
from dlpack_producer import Capsule, Producer

Q = np.zeros((1, 8, 2, 64), np.float32)


def cli_errors(*args):
    """The error lines of the fmhajit command line for args."""
    run = subprocess.run([cli_binary(), *args], capture_output=True, text=True)
    assert run.returncode != 0, run.stderr
    return [line.removeprefix("error: ") for line in run.stderr.splitlines()]


@pytest.mark.parametrize("q,k,v,message", [
    (Q[0], Q, Q, r"q: expected \[batch, seqlen, heads, head_dim\]; got shape \(8, 2, 64\)"),
    (Q, np.zeros((1, 8, 2, 32), np.float32), Q, "k has head_dim 32 but q has 64"),
    (Q, Q, np.zeros((1, 9, 2, 64), np.float32), "v has a leading dim 9 but k has 8"),
    (Q, np.zeros((2, 8, 2, 64), np.float32), np.zeros((2, 8, 2, 64), np.float32),
     "k has batch 2 but q has 1"),
    (Q, np.zeros((1, 8, 1, 64), np.float32), Q, "v has heads 2 but k has 1"),
])
def test_shapes(q, k, v, message):
    with pytest.raises(ValueError, match=message):
        fmhajit.attention(q, k, v)


def test_out_and_lse_shapes():
    with pytest.raises(ValueError, match=r"out has a leading dim 4 but q has 8"):
        fmhajit.attention(Q, Q, Q, out=np.zeros((1, 4, 2, 64), np.float32))
    with pytest.raises(ValueError, match=r"lse: expected \[batch, heads_q, seqlen_q\]"):
        fmhajit.attention(Q, Q, Q, return_lse=True, lse=np.zeros((1, 8, 2), np.float32))
    with pytest.raises(TypeError, match="lse: dtype float16 is not supported; use float32"):
        fmhajit.attention(Q, Q, Q, return_lse=True, lse=np.zeros((1, 2, 8), np.float16))


@pytest.mark.parametrize("dtype,name", [(np.float64, "float64"), (np.int32, "int32")])
def test_dtypes(dtype, name):
    with pytest.raises(TypeError, match=f"q: dtype {name} is not supported; use float32, float16 or bfloat16"):
        fmhajit.attention(Q.astype(dtype), Q, Q)


def test_mixed_dtypes():
    with pytest.raises(TypeError, match="k: dtype float16 differs from q's float32"):
        fmhajit.attention(Q, Q.astype(np.float16), Q)
    with pytest.raises(TypeError, match="out: dtype float16 is neither q's float32 nor float32"):
        fmhajit.attention(Q, Q, Q, out=np.zeros(Q.shape, np.float16))


def test_strides():
    wide = np.zeros((1, 8, 2, 128), np.float32)
    with pytest.raises(ValueError, match=r"q: the last dim \(head_dim\) must be contiguous, stride 1; got stride 2"):
        fmhajit.attention(wide[..., ::2], Q, Q)
    backwards = Capsule(Q, strides=[1024, -128, 64, 1])
    with pytest.raises(ValueError, match="q: negative strides are not supported"):
        fmhajit.attention(backwards.capsule, Q, Q, out=np.zeros_like(Q))
    assert backwards.deleted == 1  # consumed: fmhajit ran the producer's deleter


def test_read_only_numpy():
    with pytest.raises(ValueError, match="k: Cannot export readonly array.* Pass a writable copy"):
        fmhajit.attention(Q, np.broadcast_to(Q[:, :, :1], Q.shape), Q)


def test_devices():
    with pytest.raises(ValueError, match="q: memory on DLPack device type 4 is not supported"):
        fmhajit.attention(Capsule(Q, device_type=4).capsule, Q, Q, out=np.zeros_like(Q))
    cuda_q = Capsule(Q, device_type=2)  # checked before anything reads it
    with pytest.raises(ValueError, match="k is on cpu but q is on cuda:0"):
        fmhajit.attention(cuda_q.capsule, Q, Q, out=np.zeros_like(Q))


def test_not_an_array():
    with pytest.raises(TypeError, match="k: expected an array that supports DLPack"):
        fmhajit.attention(Q, [[1.0]], Q)
    with pytest.raises(TypeError, match="fmhajit makes results as NumPy arrays"):
        fmhajit.attention(Capsule(Q).capsule, Q, Q)


def test_capsule_is_consumed_once():
    c = Capsule(Q)
    out = fmhajit.attention(c.capsule, Q, Q, out=np.zeros_like(Q))
    assert out.shape == Q.shape and c.deleted == 1
    with pytest.raises(TypeError, match="a capsule can be consumed only once"):
        fmhajit.attention(c.capsule, Q, Q, out=np.zeros_like(Q))


def test_other_host_arrays_give_numpy():
    out = fmhajit.attention(Producer(Q), Producer(Q), Producer(Q))
    assert isinstance(out, np.ndarray) and out.shape == Q.shape


def test_keywords():
    with pytest.raises(ValueError, match=r"window=\(4, 2\) with causal=True"):
        fmhajit.attention(Q, Q, Q, causal=True, window=(4, 2))
    with pytest.raises(ValueError, match="varlen needs both cu_seqlens_q and cu_seqlens_k"):
        fmhajit.attention(Q[0], Q[0], Q[0], cu_seqlens_q=[0, 8])
    with pytest.raises(ValueError, match="cu_seqlens_k reaches row 9 but k has 8 rows"):
        fmhajit.attention(Q[0], Q[0], Q[0], cu_seqlens_q=[0, 8], cu_seqlens_k=[0, 9])
    with pytest.raises(ValueError, match="alibi_slopes: expected 2 values"):
        fmhajit.attention(Q, Q, Q, alibi_slopes=[0.5])


@pytest.mark.parametrize("shape_k", [(1, 0, 2, 64), (1, 8, 0, 64)])
def test_empty_dims(shape_k):
    """0 keys or 0 K/V heads would read as the API's defaults (seqlen_q
    keys, heads_q heads): refused before that."""
    k = np.zeros(shape_k, np.float32)
    with pytest.raises(ValueError, match="k: every dim must be >= 1"):
        fmhajit.attention(Q, k, k)


def test_zero_dim_arrays():
    """A 0-dim array has no head_dim: the shape check names it (the
    head_dim stride check read past the dims of one)."""
    scalar = np.array(1.0, np.float32)
    with pytest.raises(ValueError, match=r"v: expected \[batch, seqlen, heads, head_dim\]"):
        fmhajit.attention(Q, Q, scalar)
    with pytest.raises(ValueError, match=r"q: expected \[batch, seqlen, heads, head_dim\]"):
        fmhajit.attention(scalar, Q, Q, out=np.zeros_like(Q))


def test_outputs_apart_from_inputs():
    q = np.random.default_rng(0).standard_normal((1, 8, 2, 64)).astype(np.float32)
    with pytest.raises(ValueError, match="out overlaps q in memory"):
        fmhajit.attention(q, Q, Q, out=q)
    both = np.zeros((1, 8, 2, 128), np.float32)  # K and V side by side: fine to read
    fmhajit.attention(Q, both[..., :64], both[..., 64:])
    with pytest.raises(ValueError, match="out overlaps [kv] in memory"):
        fmhajit.attention(Q, both[..., :64], both[..., 64:], out=both[..., 64:])


def test_threads_and_lengths_types():
    with pytest.raises(ValueError, match="threads -1: give a count from 1 to 65536"):
        fmhajit.attention(Q, Q, Q, threads=-1)
    with pytest.raises(TypeError, match="cu_seqlens: expected integers"):
        fmhajit.attention(Q[0], Q[0], Q[0], cu_seqlens_q=[0.5, 8], cu_seqlens_k=[0, 8])


def test_api_messages_are_the_clis():
    """Problems the API finds come back with the API's own message."""
    with pytest.raises(ValueError) as e:
        fmhajit.attention(np.zeros((1, 8, 3, 64), np.float32), Q, Q)
    assert str(e.value).splitlines() == cli_errors(
        "plan", "--heads", "3", "--heads-kv", "2", "--seqlen-q", "8", "--d", "64", "--dtype", "fp32")
    with pytest.raises(ValueError) as e:
        fmhajit.attention(Q[0], Q[0], Q[0], cu_seqlens_q=[0, 5, 3], cu_seqlens_k=[0, 4, 8])
    assert "cuSeqlensQ must be cumulative lengths" in str(e.value)
