"""fmhajit.attention as a PyTorch operator: torch.library custom op
"fmhajit::attention" with a fake (meta) implementation, so torch.compile
graphs keep it as one node, and with autograd through fmhajit's backward
plan (include/fmhajit/Backward.h).

Eager calls without gradients skip the dispatcher and run directly (the
op's dispatch costs more than fmhajit's whole call); inside torch.compile,
or when an input requires grad, attention() goes through the op.
"""

from typing import Optional

import torch
from torch import Tensor

from . import _arrays
from . import _fmhajit


def use_op(torch_module, q, k, v):
    if torch_module.compiler.is_compiling():
        return True
    return torch.is_grad_enabled() and (q.requires_grad or k.requires_grad
                                        or v.requires_grad)


def _lse_shape(q, varlen):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


@torch.library.custom_op("fmhajit::attention", mutates_args=())
def attention_op(q: Tensor, k: Tensor, v: Tensor,
                 cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor],
                 alibi_slopes: Optional[Tensor], causal: bool,
                 window_left: int, window_right: int, softcap: float,
                 scale: float, threads: int, target: str,
                 kernel: str) -> tuple[Tensor, Tensor]:
    """(out, lse): the forward, always with the LSE that the backward reads."""
    from . import _attention
    window = None if (window_left, window_right) == (-1, -1) else (window_left, window_right)
    return _attention(q, k, v, causal, window, softcap, alibi_slopes, scale,
                      True, cu_seqlens_q, cu_seqlens_k, None, None, threads,
                      target, kernel, None)


@attention_op.register_fake
def _attention_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, alibi_slopes, causal,
                    window_left, window_right, softcap, scale, threads, target,
                    kernel):
    out = q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],))
    lse = q.new_empty(_lse_shape(q, cu_seqlens_q is not None), dtype=torch.float32)
    return out, lse


def _setup_context(ctx, inputs, output):
    q, k, v, cu_q, cu_k, slopes, *keywords = inputs
    ctx.save_for_backward(q, k, v, *output, cu_q, cu_k, slopes)
    ctx.keywords = keywords
    ctx.set_materialize_grads(False)  # an unused LSE's gradient stays None


def _backward(ctx, grad_out, grad_lse):
    if grad_lse is not None:
        raise NotImplementedError(
            "fmhajit's backward takes the gradient of out only; the loss "
            "depends on the returned lse, which has none")
    q, k, v, out, lse, cu_q, cu_k, slopes = ctx.saved_tensors
    causal, left, right, softcap, scale, threads, target, kernel = ctx.keywords
    window = None if (left, right) == (-1, -1) else (left, right)
    from . import _backward as run_backward
    dq, dk, dv = run_backward(q, k, v, out, lse, grad_out, causal, window,
                              softcap, slopes, scale, cu_q, cu_k, threads,
                              target, kernel)
    return (dq, dk, dv) + (None,) * 11


attention_op.register_autograd(_backward, setup_context=_setup_context)


def attention_op_call(q, k, v, causal, window, softcap, alibi_slopes, scale,
                      return_lse, cu_seqlens_q, cu_seqlens_k, threads, target,
                      kernel):
    """fmhajit.attention's arguments -> the op's."""
    left, right = (-1, -1) if window is None else (int(w) for w in window)
    slopes = None
    if alibi_slopes is not None:
        slopes = torch.as_tensor(alibi_slopes, dtype=torch.float32, device=q.device)
    cu_q, cu_k = (None if c is None else torch.as_tensor(c, dtype=torch.int32, device=q.device)
                  for c in (cu_seqlens_q, cu_seqlens_k))
    out, lse = torch.ops.fmhajit.attention(
        q, k, v, cu_q, cu_k, slopes, bool(causal), left, right,
        float(softcap or 0.0), float(scale or 0.0), int(threads or 0),
        target or "", kernel or "")
    return (out, lse) if return_lse else out


__all__ = ["attention_op", "attention_op_call", "use_op", "_arrays"]
