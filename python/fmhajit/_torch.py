"""fmhajit.attention as a PyTorch operator: torch.library custom op
"fmhajit::attention" with a fake (meta) implementation, so torch.compile
graphs keep it as one node, and with autograd through fmhajit's backward
plan (include/fmhajit/Backward.h).

Eager calls without gradients skip the op and run directly (the op's
dispatch costs more than fmhajit's whole call); inside torch.compile, or
when an input requires grad, attention() goes through the op.
"""

from typing import Optional

import torch
from torch import Tensor

# torch.library.custom_op (with register_fake and register_autograd) came
# with PyTorch 2.4; older versions get the eager path only.
HAS_OP = hasattr(torch.library, "custom_op")


def _compiling():
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and compiler.is_compiling()


def use_op(q, k, v, sinks=None, attn_bias=None):
    """Whether this call goes through the op: inside torch.compile, or when
    a gradient is wanted (of sinks or attn_bias too: the op's backward then
    says it has none, where the eager path would leave them without)."""
    grad = torch.is_grad_enabled() and any(
        getattr(x, "requires_grad", False) for x in (q, k, v, sinks, attn_bias))
    if not HAS_OP:
        if grad:
            raise NotImplementedError(
                f"gradients through fmhajit.attention need PyTorch 2.4 or newer "
                f"(torch.library.custom_op); this is {torch.__version__}")
        return False
    return grad or _compiling()


def _window(left, right):
    return None if (left, right) == (-1, -1) else (left, right)


def _lse_shape(q, varlen):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


def _forward(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Optional[Tensor],
             cu_seqlens_k: Optional[Tensor], alibi_slopes: Optional[Tensor],
             sinks: Optional[Tensor], attn_bias: Optional[Tensor], causal: bool, window_left: int, window_right: int, softcap: float,
             scale: float, threads: int, target: str, kernel: str,
             dropout_p: float, dropout_seed: int,
             dropout_offset: int) -> tuple[Tensor, Tensor]:
    """(out, lse): the forward, always with the LSE that the backward reads.
    The dropout seed is an argument (drawn before the op when the caller
    gave none), so the backward gets the forward's."""
    from . import _attention
    return _attention(q, k, v, causal, _window(window_left, window_right), softcap,
                      alibi_slopes, scale, True, cu_seqlens_q, cu_seqlens_k, None,
                      None, threads, target, kernel, None,
                      _dropout_tuple(dropout_p, dropout_seed, dropout_offset),
                      sinks, attn_bias)


def _dropout_tuple(p, seed, offset):
    return (p, seed, offset) if p else None


def _fake(q, k, v, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks, attn_bias,
          causal, window_left,
          window_right, softcap, scale, threads, target, kernel, dropout_p,
          dropout_seed, dropout_offset):
    out = q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],))
    lse = q.new_empty(_lse_shape(q, cu_seqlens_q is not None), dtype=torch.float32)
    return out, lse


def _setup_context(ctx, inputs, output):
    q, k, v, cu_q, cu_k, slopes, sinks, attn_bias, *keywords = inputs
    ctx.save_for_backward(q, k, v, *output, cu_q, cu_k, slopes)
    ctx.keywords = keywords
    # The backward has no gradients for them, nor runs with them (C++:
    # planBackward refuses Problem::sink and Problem::bias).
    ctx.unsupported = [name for name, x in (("sinks", sinks), ("attn_bias", attn_bias))
                       if x is not None]
    ctx.set_materialize_grads(False)  # an unused LSE's gradient stays None


def _backward(ctx, grad_out, grad_lse):
    if grad_lse is not None:
        raise NotImplementedError(
            "fmhajit's backward takes the gradient of out only; the loss "
            "depends on the returned lse, which has none")
    if ctx.unsupported:
        raise NotImplementedError(
            f"fmhajit's backward does not support {' and '.join(ctx.unsupported)} "
            f"yet (it has no gradient of the sinks or the bias, and its kernels "
            f"do not read them): run this forward under torch.no_grad(), "
            f"or without {' and '.join(ctx.unsupported)}")
    q, k, v, out, lse, cu_q, cu_k, slopes = ctx.saved_tensors
    (causal, left, right, softcap, scale, threads, target, kernel, dropout_p,
     dropout_seed, dropout_offset) = ctx.keywords
    from . import _backward as run_backward
    grads = run_backward(q, k, v, out, lse, grad_out, causal, _window(left, right),
                         softcap, slopes, scale, cu_q, cu_k, threads, target, kernel,
                         _dropout_tuple(dropout_p, dropout_seed, dropout_offset))
    return tuple(grads) + (None,) * 16


if HAS_OP:
    attention_op = torch.library.custom_op("fmhajit::attention", _forward, mutates_args=())
    attention_op.register_fake(_fake)
    attention_op.register_autograd(_backward, setup_context=_setup_context)


def attention_op_call(q, k, v, causal, window, softcap, alibi_slopes, scale,
                      return_lse, cu_seqlens_q, cu_seqlens_k, threads, target,
                      kernel, dropout, sinks=None, attn_bias=None):
    """fmhajit.attention's arguments -> the op's; dropout is the resolved
    (p, seed, offset) or None. sinks become float32 on q's device (a
    tensor so made stays the caller's, with its autograd); attn_bias must
    be a tensor or become one on q's device (its dtype is checked by the
    op, as fmhajit.attention's)."""
    left, right = (-1, -1) if window is None else (int(w) for w in window)
    slopes = None
    if alibi_slopes is not None:
        slopes = torch.as_tensor(alibi_slopes, dtype=torch.float32, device=q.device)
    cu_q, cu_k = (None if c is None else torch.as_tensor(c, dtype=torch.int32, device=q.device)
                  for c in (cu_seqlens_q, cu_seqlens_k))
    if sinks is not None:
        sinks = torch.as_tensor(sinks, dtype=torch.float32, device=q.device)
    if attn_bias is not None:
        attn_bias = torch.as_tensor(attn_bias, device=q.device)
    p, seed, offset = dropout or (0.0, 0, 0)
    out, lse = torch.ops.fmhajit.attention(
        q, k, v, cu_q, cu_k, slopes, sinks, attn_bias, bool(causal), left, right,
        float(softcap or 0.0), float(scale or 0.0), int(threads or 0),
        target or "", kernel or "", p, seed, offset)
    return (out, lse) if return_lse else out
