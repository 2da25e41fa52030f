"""Gradients of fmhajit.attention on PyTorch tensors: through the op's
autograd (fmhajit's backward plan) on the CPU and CUDA against float64
autograd, and the calls whose gradients are refused with a message.
Skipped where torch (or a CUDA device) is missing."""

import pytest

torch = pytest.importorskip("torch")
import fmhajit  # noqa: E402  (after torch: registers torch.ops.fmhajit)
from torch_support import cuda, needs_op, randn  # noqa: E402


def reference_torch(q, k, v, causal):
    """float64 attention in torch, for gradients by autograd."""
    group = q.shape[2] // k.shape[2]
    k, v = (x.repeat_interleave(group, dim=2) for x in (k, v))
    s = torch.einsum("bihd,bjhd->bhij", q, k) / q.shape[-1] ** 0.5
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        j, i = (torch.arange(n, device=q.device) for n in (sk, sq))
        keep = j[None, :] <= i[:, None] + sk - sq
        s = s.masked_fill(~keep, float("-inf"))
    return torch.einsum("bhij,bjhd->bihd", s.softmax(-1), v)


@needs_op
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cpu_gradients(dtype):
    q, k, v = (randn(1, 24, 4, 64, dtype=dtype, seed=s).requires_grad_() for s in (4, 5, 6))
    k2, v2 = (randn(1, 30, 2, 64, dtype=dtype, seed=s).requires_grad_() for s in (7, 8))
    g = randn(1, 24, 4, 64, dtype=dtype, seed=9)
    out = fmhajit.attention(q, k2, v2, causal=True)
    (out.float() * g.float()).sum().backward()
    leaves = [x.detach().double().requires_grad_() for x in (q, k2, v2)]
    (reference_torch(*leaves, causal=True) * g.double()).sum().backward()
    tol = fmhajit.tolerance(dtype, gradients=True)
    for got, want in zip((q.grad, k2.grad, v2.grad), leaves):
        err = (got.double() - want.grad).norm() / want.grad.norm()
        assert err <= tol["rel_l2"], f"rel_l2 {err:.3g}"


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_backward_plan_cpu(dtype):
    """What the op's autograd runs (fmhajit._backward), on any PyTorch:
    GQA, a window and softcap, against float64 autograd."""
    q = randn(2, 20, 4, 64, dtype=dtype, seed=1)
    k, v = (randn(2, 26, 2, 64, dtype=dtype, seed=s) for s in (2, 3))
    g = randn(2, 20, 4, 64, dtype=dtype, seed=4)
    out, lse = fmhajit.attention(q, k, v, window=(6, 2), softcap=4.0, return_lse=True)
    dq, dk, dv = fmhajit._backward(q, k, v, out, lse, g, False, (6, 2), 4.0, None, None,
                                   None, None, 2, None, None)
    leaves = [x.double().requires_grad_() for x in (q, k, v)]
    qq, kk, vv = leaves
    group = 2
    kk, vv = (x.repeat_interleave(group, dim=2) for x in (kk, vv))
    s = torch.einsum("bihd,bjhd->bhij", qq, kk) / 8.0
    s = 4.0 * torch.tanh(s / 4.0)
    diag = torch.arange(20)[:, None] + 6
    j = torch.arange(26)[None, :]
    s = s.masked_fill(~((j >= diag - 6) & (j <= diag + 2)), float("-inf"))
    (torch.einsum("bhij,bjhd->bihd", s.softmax(-1), vv) * g.double()).sum().backward()
    tol = fmhajit.tolerance(dtype, gradients=True)
    for got, want in zip((dq, dk, dv), leaves):
        assert got.dtype == q.dtype
        err = (got.double() - want.grad).norm() / want.grad.norm()
        assert err <= tol["rel_l2"], f"rel_l2 {err:.3g}"


@needs_op
def test_gradient_of_lse_is_refused():
    q = randn(1, 8, 2, 64, seed=1).requires_grad_()
    out, lse = fmhajit.attention(q, q, q, return_lse=True)
    with pytest.raises(NotImplementedError, match="gradient of out only"):
        lse.sum().backward()


@pytest.mark.skipif(hasattr(torch.library, "custom_op"), reason="PyTorch >= 2.4 has the op")
def test_old_torch_refuses_gradients():
    q = randn(1, 8, 2, 64, seed=1).requires_grad_()
    with pytest.raises(NotImplementedError, match="need PyTorch 2.4 or newer"):
        fmhajit.attention(q, q, q)


@cuda
@needs_op
def test_cuda_gradients():
    q = randn(2, 100, 8, 64, dtype="bf16", device="cuda", seed=2).requires_grad_()
    k, v = (randn(2, 150, 2, 64, dtype="bf16", device="cuda", seed=s).requires_grad_()
            for s in (3, 4))
    g = randn(2, 100, 8, 64, dtype="bf16", device="cuda", seed=5)
    (fmhajit.attention(q, k, v, causal=True).float() * g.float()).sum().backward()
    leaves = [x.detach().double().requires_grad_() for x in (q, k, v)]
    (reference_torch(*leaves, causal=True) * g.double()).sum().backward()
    tol = fmhajit.tolerance("bf16", gradients=True)
    for got, want in zip((q.grad, k.grad, v.grad), leaves):
        err = (got.double() - want.grad).norm() / want.grad.norm()
        assert err <= tol["rel_l2"], f"rel_l2 {err:.3g}"


@needs_op
@pytest.mark.parametrize("wanted", ["q", "sinks", "attn_bias"])
def test_gradients_with_sinks_or_bias_are_refused(wanted):
    """The backward has no gradient of the sinks or the bias, nor runs
    with them: asking for any gradient through such a call says so."""
    q = randn(1, 16, 2, 64, seed=1).requires_grad_(wanted == "q")
    sinks = torch.zeros(2, requires_grad=wanted == "sinks")
    bias = torch.zeros(1, 1, 16, 16, requires_grad=wanted == "attn_bias")
    out = fmhajit.attention(q, q, q, sinks=sinks, attn_bias=bias)
    assert out.requires_grad
    with pytest.raises(NotImplementedError, match="backward does not support sinks and "
                                                  "attn_bias yet"):
        out.sum().backward()


@pytest.mark.skipif(hasattr(torch.library, "custom_op"), reason="PyTorch >= 2.4 has the op")
@pytest.mark.parametrize("wanted", ["sinks", "attn_bias"])
def test_old_torch_refuses_gradients_of_sinks_and_bias(wanted):
    """Without the op, a sink or bias that requires grad is refused rather
    than left without a gradient."""
    q = randn(1, 8, 2, 64, seed=1)
    extra = {"sinks": torch.zeros(2), "attn_bias": torch.zeros(8, 8)}[wanted].requires_grad_()
    with pytest.raises(NotImplementedError, match="need PyTorch 2.4 or newer"):
        fmhajit.attention(q, q, q, **{wanted: extra})
