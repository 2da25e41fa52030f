"""fmhajit.attention(dropout_p=, dropout_seed=, dropout_offset=) on the host.

The keep-mask is checked bit for bit against philox.py, this directory's own
Philox4x32-10 (itself checked against Random123's known-answer vectors):
with q = 0 every visible key scores alike, and with v one-hot (key j's row
is e_j) out[i, h, j] is P_ij after dropout, so each element of out shows one
keep bit. Then the keep rate, seeds and offsets, p = 0 as the plain kernel,
out and lse against the float64 reference with the mask, the refusals, and
gradients through PyTorch (CPU) where torch is installed."""

import numpy as np
import pytest

import fmhajit
import philox
from conftest import assert_close, poisoned, random_qkv, reference

D = 128  # one-hot V rows for up to 128 keys

# Random123's tests/kat_vectors for philox4x32_10 (the ones
# tests/unit/DropoutTest.cpp uses): counter, key, result.
KAT_VECTORS = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


@pytest.mark.parametrize("counter,key,result", KAT_VECTORS)
def test_reference_philox_is_random123s(counter, key, result):
    assert tuple(int(w) for w in philox.philox4x32_10(counter, key)) == result


def test_reference_thresholds():
    assert philox.threshold(0.5) == 0x80000000
    assert philox.threshold(0.25) == 0x40000000
    assert philox.threshold(np.nextafter(np.float32(1), np.float32(0))) == 0xFFFFFF00
    assert philox.threshold(0.0) == 0


def one_hot_problem(lengths_q, lengths_k, heads_q, heads_kv):
    """q = 0, k = 0.5, v one-hot per key (varlen when more than one length
    is given per side... or always, packed as cu_seqlens)."""
    total_q, total_k = sum(lengths_q), sum(lengths_k)
    q = np.zeros((total_q, heads_q, D), np.float32)
    k = np.full((total_k, heads_kv, D), 0.5, np.float32)
    v = np.zeros((total_k, heads_kv, D), np.float32)
    start = 0
    for sk in lengths_k:
        v[start + np.arange(sk), :, np.arange(sk)] = 1.0
        start += sk
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    return q, k, v, cu_q, cu_k


def expected_out(p, seed, offset, lengths_q, lengths_k, heads_q):
    """What out must hold: keep / (1 - p) / sk where key j < sk, else 0."""
    rows = []
    for b, (sq, sk) in enumerate(zip(lengths_q, lengths_k)):
        keep = philox.keep_mask(p, seed, offset, b, heads_q, sq, sk)  # [h, i, j]
        row = np.zeros((sq, heads_q, D))
        row[:, :, :sk] = keep.transpose(1, 0, 2) * (philox.scale(p) / sk)
        rows.append(row)
    return np.concatenate(rows)


MASK_CASES = {
    # name: (lengths_q, lengths_k, heads_q, heads_kv, varlen)
    "gqa_two_key_tiles": ([70, 70], [128, 128], 4, 2, False),
    "short_keys": ([90], [37], 3, 3, False),
    "varlen": ([1, 89, 30], [128, 3, 69], 2, 1, True),
}


@pytest.mark.parametrize("case", MASK_CASES)
def test_keep_mask_is_philox_of_the_position(case):
    lengths_q, lengths_k, hq, hkv, varlen = MASK_CASES[case]
    q, k, v, cu_q, cu_k = one_hot_problem(lengths_q, lengths_k, hq, hkv)
    p, seed, offset = 0.3, 0xFEEDFACE12345678 >> 1, 77
    if varlen:
        out = fmhajit.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                dropout_p=p, dropout_seed=seed, dropout_offset=offset,
                                threads=2)
    else:
        shape = lambda x, n: x.reshape(len(lengths_q), n, *x.shape[1:])  # noqa: E731
        out = fmhajit.attention(shape(q, lengths_q[0]), shape(k, lengths_k[0]),
                                shape(v, lengths_k[0]), dropout_p=p, dropout_seed=seed,
                                dropout_offset=offset, threads=2)
        out = out.reshape(-1, hq, D)
    want = expected_out(p, seed, offset, lengths_q, lengths_k, hq)
    wrong = np.abs(out - want) > 1e-6 * np.abs(want)
    assert not np.isnan(out).any()
    assert wrong.sum() == 0, f"{wrong.sum()} elements of out whose keep bit differs"
    # The keep rate: Bernoulli(0.7) draws, within 6 sigma.
    seen = sum(hq * sq * sk for sq, sk in zip(lengths_q, lengths_k))
    kept = int((want > 0).sum())
    assert abs(kept - 0.7 * seen) <= 6 * np.sqrt(seen * 0.3 * 0.7), (kept, seen)


def dropout_out(p, seed, offset=0, **kwargs):
    """out of a fixed random problem (one-hot v, so out shows the mask)."""
    q, k, v, _, _ = one_hot_problem([40], [100], 4, 2)
    q = np.random.default_rng(5).standard_normal(q.shape).astype(np.float32)
    return fmhajit.attention(q[None], k[None], v[None], dropout_p=p, dropout_seed=seed,
                             dropout_offset=offset, threads=2, **kwargs)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_rate(p):
    out = dropout_out(p, 12345)
    kept, seen = int((out[..., :100] != 0).sum()), out[..., :100].size
    assert abs(kept - (1 - p) * seen) <= 6 * np.sqrt(seen * p * (1 - p)), (kept, seen)


def test_same_seed_same_bits_other_seed_or_offset_other_bits():
    a = dropout_out(0.25, 99, 3)
    assert np.array_equal(a, dropout_out(0.25, 99, 3))
    for other in (dropout_out(0.25, 100, 3), dropout_out(0.25, 99, 4),
                  dropout_out(0.25, 99 + (1 << 32), 3)):  # the seed's high word
        assert not np.array_equal(a != 0, other != 0)


def test_no_seed_draws_one_per_call_from_numpys_generator():
    np.random.seed(7)
    a, b = dropout_out(0.5, None), dropout_out(0.5, None)
    assert not np.array_equal(a != 0, b != 0)  # a new seed each call
    np.random.seed(7)
    assert np.array_equal(a, dropout_out(0.5, None))  # np.random.seed repeats it


def test_zero_probability_is_the_plain_kernel():
    [q, k, v], _ = random_qkv(np.random.default_rng(3), (1, 33, 2, 64), (1, 70, 2, 64))
    plain = fmhajit.attention(q, k, v, threads=2)
    assert np.array_equal(plain, fmhajit.attention(q, k, v, dropout_p=0.0,
                                                   dropout_seed=5, threads=2))
    kernel = fmhajit.plan(q, k, v, dropout_p=0.0)["steps"][0]["kernel"]
    assert "_do_" not in kernel
    kernel = fmhajit.plan(q, k, v, dropout_p=0.1)["steps"][0]["kernel"]
    assert "_do_" in kernel


def test_decode_shapes_run_in_one_pass():
    """Split-KV takes no dropout: a decode-shaped problem is not split."""
    [q, k, v], _ = random_qkv(np.random.default_rng(4), (1, 1, 8, 64), (1, 5000, 1, 64))
    steps = fmhajit.plan(q, k, v, dropout_p=0.2)["steps"]
    assert len(steps) == 1 and "_do_" in steps[0]["kernel"]


def reference_with_dropout(q, k, v, p, seed, offset, causal=False, window=None,
                           scale=None, cu_q=None, cu_k=None):
    """The float64 reference, its P times keep / (1 - p); the LSE is the
    softmax's before dropout."""
    batch = len(cu_q) - 1 if cu_q is not None else q.shape[0]
    outs = []
    for b in range(batch):
        if cu_q is None:
            qb, kb, vb = q[b], k[b], v[b]
        else:
            qb, kb, vb = (x[c[b]:c[b + 1]] for x, c in ((q, cu_q), (k, cu_k), (v, cu_k)))
        sq, hq, dv = qb.shape[0], qb.shape[1], vb.shape[-1]
        sk = kb.shape[0]
        # P itself: the reference's output of one-hot V rows [Sk] per key.
        eye = np.broadcast_to(np.eye(sk)[:, None, :], (sk, kb.shape[1], sk))
        probs, _ = reference(qb[None], kb[None], eye[None], causal, window,
                             scale=scale)
        keep = philox.keep_mask(p, seed, offset, b, hq, sq, sk).transpose(1, 0, 2)
        dropped = probs[0] * keep * philox.scale(p)  # [Sq, Hq, Sk]
        group = hq // kb.shape[1]
        outs.append(np.einsum("ihj,jhd->ihd", dropped, np.repeat(vb, group, axis=1)))
        assert outs[-1].shape[-1] == dv
    if cu_q is None:
        return np.stack(outs)
    return np.concatenate(outs)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_out_and_lse_against_the_reference(rng, dtype):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 50, 4, 64), (2, 70, 2, 64), dtype=dtype)
    out = poisoned((2, 50, 4, 64), dtype)
    _, lse = fmhajit.attention(q, k, v, causal=True, return_lse=True, out=out,
                               dropout_p=0.25, dropout_seed=2024, dropout_offset=9)
    ref = reference_with_dropout(q64, k64, v64, 0.25, 2024, 9, causal=True)
    _, ref_lse = reference(q64, k64, v64, causal=True)
    assert_close(out, ref, dtype, lse=lse, ref_lse=ref_lse)


def test_varlen_window_against_the_reference(rng):
    cu_q = np.array([0, 7, 57, 58], np.int32)
    cu_k = np.array([0, 90, 140, 141], np.int32)
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (58, 4, 64), (141, 2, 64))
    out = fmhajit.attention(q, k, v, window=(20, 3), cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                            dropout_p=0.4, dropout_seed=1, threads=2)
    ref = reference_with_dropout(q64, k64, v64, 0.4, 1, 0, window=(20, 3),
                                 cu_q=cu_q, cu_k=cu_k)
    assert_close(out, ref, "fp32")


def small_qkv():
    [q, k, v], _ = random_qkv(np.random.default_rng(6), (1, 8, 2, 64), (1, 8, 2, 64))
    return q, k, v


@pytest.mark.parametrize("p", [1.0, -0.1, float("nan"), 1.5])
def test_probability_out_of_range_is_the_apis_error(p):
    with pytest.raises(ValueError, match=r"dropout.p must be in \[0, 1\)"):
        fmhajit.attention(*small_qkv(), dropout_p=p, dropout_seed=1)


def test_probability_just_below_one_runs():
    """0.99999999 rounds to 1.0 in float32: it runs as the float below 1,
    as `fmhajit run --dropout-p` does, and keeps almost nothing."""
    out = fmhajit.attention(*small_qkv(), dropout_p=0.99999999, dropout_seed=1)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("keywords,error,match", [
    ({"dropout_seed": -1}, ValueError, r"dropout_seed -1: .*0 to 2\^63-1"),
    ({"dropout_seed": 1 << 63}, ValueError, r"dropout_seed .*0 to 2\^63-1"),
    ({"dropout_seed": 1.5}, TypeError, "dropout_seed: expected an int or None"),
    ({"dropout_offset": -1}, ValueError, r"dropout_offset -1: .*0 to 2\^32-1"),
    ({"dropout_offset": 1 << 32}, ValueError, r"dropout_offset .*0 to 2\^32-1"),
    ({"dropout_offset": "3"}, TypeError, "dropout_offset: expected an int"),
    ({"dropout_p": "0.1"}, TypeError, "dropout_p: expected a number"),
])
def test_bad_dropout_arguments(keywords, error, match):
    args = {"dropout_p": 0.1, "dropout_seed": 1, **keywords}
    with pytest.raises(error, match=match):
        fmhajit.attention(*small_qkv(), **args)


# PyTorch on the CPU: the same mask, the seed the forward drew kept for the
# backward, and gradients against float64 autograd with the mask.

def torch_or_skip():
    return pytest.importorskip("torch")


def reference_torch(torch, q, k, v, p, seed, offset, causal):
    """float64 attention with dropout in torch, for gradients by autograd."""
    hq, sq, sk = q.shape[2], q.shape[1], k.shape[1]
    group = hq // k.shape[2]
    k, v = (x.repeat_interleave(group, dim=2) for x in (k, v))
    s = torch.einsum("bihd,bjhd->bhij", q, k) / q.shape[-1] ** 0.5
    if causal:
        j, i = torch.arange(sk), torch.arange(sq)
        s = s.masked_fill(~(j[None, :] <= i[:, None] + sk - sq), float("-inf"))
    keep = np.stack([philox.keep_mask(p, seed, offset, b, hq, sq, sk)
                     for b in range(q.shape[0])])
    z = torch.from_numpy(keep * philox.scale(p))
    return torch.einsum("bhij,bjhd->bihd", s.softmax(-1) * z, v)


def torch_inputs(torch, dtype):
    gen = torch.Generator().manual_seed(11)
    q, k, v, g = (torch.randn(*shape, generator=gen).to(dtype)
                  for shape in ((2, 24, 4, 64), (2, 30, 2, 64), (2, 30, 2, 64),
                                (2, 24, 4, 64)))
    return q, k, v, g


def check_gradients(torch, grads, q, k, v, g, seed, dtype_name):
    leaves = [x.detach().double().requires_grad_() for x in (q, k, v)]
    (reference_torch(torch, *leaves, 0.2, seed, 5, causal=True) * g.double()).sum().backward()
    tol = fmhajit.tolerance(dtype_name, gradients=True)
    for got, want in zip(grads, leaves):
        err = (got.double() - want.grad).norm() / want.grad.norm()
        assert err <= tol["rel_l2"], f"rel_l2 {err:.3g}"


def test_torch_cpu_mask_and_backward_plan():
    """What the op's autograd runs (fmhajit._backward, on any PyTorch) with
    the forward's dropout arguments, against float64 autograd."""
    torch = torch_or_skip()
    q, k, v, g = torch_inputs(torch, torch.float32)
    out, lse = fmhajit.attention(q, k, v, causal=True, return_lse=True, dropout_p=0.2,
                                 dropout_seed=31337, dropout_offset=5, threads=2)
    want = reference_torch(torch, *(x.double() for x in (q, k, v)), 0.2, 31337, 5, True)
    assert_close(out.numpy(), want.numpy(), "fp32")
    grads = fmhajit._backward(q, k, v, out, lse, g, True, None, None, None, None, None,
                              None, 2, None, None, dropout=(0.2, 31337, 5))
    check_gradients(torch, grads, q, k, v, g, 31337, "fp32")


def test_torch_no_seed_draws_from_torchs_generator():
    torch = torch_or_skip()
    q, k, v, _ = torch_inputs(torch, torch.float32)
    torch.manual_seed(3)
    a = fmhajit.attention(q, k, v, dropout_p=0.5)
    b = fmhajit.attention(q, k, v, dropout_p=0.5)
    assert not torch.equal(a, b)  # another seed, another mask
    torch.manual_seed(3)
    assert torch.equal(a, fmhajit.attention(q, k, v, dropout_p=0.5))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_torch_cpu_gradients_through_the_op(dtype):
    """Autograd through torch.ops.fmhajit.attention: the seed drawn for the
    forward (none given) is the one the backward's mask uses."""
    torch = torch_or_skip()
    if not hasattr(torch.library, "custom_op"):
        pytest.skip("PyTorch < 2.4: no torch.library.custom_op")
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    q, k, v, g = torch_inputs(torch, torch_dtype)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    torch.manual_seed(8)
    seed = int(torch.randint(0, 2 ** 63 - 1, (), dtype=torch.int64))
    torch.manual_seed(8)
    out = fmhajit.attention(q, k, v, causal=True, dropout_p=0.2, dropout_offset=5)
    (out.float() * g.float()).sum().backward()
    check_gradients(torch, (q.grad, k.grad, v.grad), q, k, v, g, seed, dtype)
