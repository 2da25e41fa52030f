"""fmhajit.attention as a PyTorch operator: torch.library custom op
"fmhajit::attention" with a fake (meta) implementation, so torch.compile
graphs keep it as one node, and with autograd through fmhajit's backward
plan (include/fmhajit/Backward.h).

Eager calls without gradients skip the op and run directly (the op's
dispatch costs more than fmhajit's whole call); inside torch.compile, or
when an input requires grad, attention() goes through the op.

A variant goes through the op as its source and name (str arguments) and
its run-time tensors as four optional tensors, one per fmhajit_tensor
slot: Optional[Tensor] arguments take None for a gradient on every
PyTorch with the op, where a Tensor[] argument's gradient must mirror the
list's structure. The backward refuses a variant (it has no score_mod or
mask_mod, nor a gradient of the variant's tensors).
"""

import sys
import warnings
from typing import Optional

import torch
from torch import Tensor

# torch.library.custom_op (with register_fake and register_autograd) came
# with PyTorch 2.4; older versions get the eager path only.
HAS_OP = hasattr(torch.library, "custom_op")


# DLPack's C exchange API, defined by torch.Tensor itself (PyTorch 2.11 has
# DLPack 1.3's): where it is, the compiled half reads plain tensors, finds
# the current CUDA stream and takes a CUDA plan's workspace through it
# (python/src/ExchangeApi.h), so the eager path passes no stream and no
# workspace allocator.
EXCHANGE = "__dlpack_c_exchange_api__" in vars(torch.Tensor)


# torch.compiler.is_compiling (the PyTorch versions with the op have it),
# found once rather than at every call: every eager call asks it.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)


def _compiling():
    return _is_compiling is not None and _is_compiling()


def _never():
    return False


# What fmhajit.attention asks before its C++ entry, which torch.compile
# cannot trace: whether the call must go through the op instead.
# torch.compiler.is_compiling itself (one call less) where the op exists;
# without the op nothing is routed to it.
compiling = _is_compiling if HAS_OP and _is_compiling is not None else _never


def flag_answer(ask):
    """How fmhajit.attention's C function may answer ask() (compiling)
    without calling it (fmhajit._fmhajit.answer_compiling, python/src/
    AttentionFunction.h): (globals, name), the global whose truth is the
    answer, or (None, None) for false; None where it must call compiling.
    The C function never runs inside a Dynamo trace (Dynamo traces the def
    in its place), and outside one torch.compiler.is_compiling returns its
    module's _is_compiling_flag (torch.export sets it; its
    torch.jit.is_scripting() is false outside TorchScript). A body that
    reads other names than that one is called, as before."""
    if ask is _never:
        return None, None
    code = getattr(ask, "__code__", None)
    flag = "_is_compiling_flag"
    if (code is not None and flag in ask.__globals__
            and code.co_names == ("torch", "jit", "is_scripting", flag)):
        return ask.__globals__, flag
    return None


FLAG_ANSWER = flag_answer(compiling)


# torch.compile cannot trace a C function: fmhajit.attention
# (python/src/AttentionFunction.h) is traced as the def it is made from,
# fmhajit._python_attention, which Dynamo is told through
# substitute_in_graph (PyTorch 2.5). Where the op exists without it (2.4),
# fmhajit.attention stays the def (fmhajit._use_torch_glue).
_substitute_in_graph = getattr(torch.compiler, "substitute_in_graph", None) \
    if hasattr(torch, "compiler") else None
TRACES_C_ATTENTION = _substitute_in_graph is not None or not HAS_OP


_traced = False  # whether _trace_attention_as_python has registered


def _trace_attention_as_python():
    """Registers fmhajit._python_attention as fmhajit.attention's stand-in in
    Dynamo's graphs, once (fmhajit._on_dynamo calls it when torch._dynamo
    has loaded). Warns rather than raises: it may run inside the import of
    torch._dynamo, which must not fail for it."""
    global _traced
    if _traced or not (HAS_OP and TRACES_C_ATTENTION):
        return
    _traced = True
    from . import attention, _python_attention
    try:
        _substitute_in_graph(attention)(_python_attention)
    except Exception as error:  # noqa: BLE001
        warnings.warn(f"fmhajit: torch.compile cannot trace fmhajit.attention "
                      f"({error}); a compiled call breaks the graph there")


if "torch._dynamo" in sys.modules:  # loaded while torch was (fmhajit._on_dynamo)
    _trace_attention_as_python()


def requires_grad(q, k, v, sinks=None, attn_bias=None, variant_call=None):
    """Whether any input requires grad (sinks, attn_bias and a variant's
    tensors too); variant_call: fmhajit._variant_call's tuple. A plain
    call's answer comes from three attributes, with no sequence built."""
    if (q.requires_grad or getattr(k, "requires_grad", False)
            or getattr(v, "requires_grad", False)):
        return True
    if sinks is None and attn_bias is None and not variant_call:
        return False
    variant_tensors = variant_call[2] if variant_call else ()
    return any(getattr(x, "requires_grad", False)
               for x in (sinks, attn_bias, *variant_tensors))


def use_op(inputs_require_grad):
    """Whether this call goes through the op, given requires_grad()'s
    answer: inside torch.compile, or when a gradient is wanted (of sinks,
    attn_bias or a variant's tensors too: the op's backward then says it
    has none, where the eager path would leave them without). Grad mode is
    asked only when an input requires grad."""
    grad = inputs_require_grad and torch.is_grad_enabled()
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
             dropout_p: float, dropout_seed: int, dropout_offset: int,
             variant: str, variant_name: str, variant_tensor0: Optional[Tensor],
             variant_tensor1: Optional[Tensor], variant_tensor2: Optional[Tensor],
             variant_tensor3: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    """(out, lse): the forward, always with the LSE that the backward reads.
    The dropout seed is an argument (drawn before the op when the caller
    gave none), so the backward gets the forward's."""
    from . import _attention
    variant_tensors = (variant_tensor0, variant_tensor1, variant_tensor2,
                       variant_tensor3)
    return _attention(q, k, v, causal, _window(window_left, window_right), softcap,
                      alibi_slopes, scale, True, cu_seqlens_q, cu_seqlens_k, None,
                      None, threads, target, kernel, None,
                      _dropout_tuple(dropout_p, dropout_seed, dropout_offset),
                      sinks, attn_bias,
                      _op_variant_call(variant, variant_name, variant_tensors))


def _dropout_tuple(p, seed, offset):
    return (p, seed, offset) if p else None


def _op_variant_call(source, name, slots):
    """fmhajit._variant_call's tuple from the op's arguments (None where
    the call had neither a variant nor tensors)."""
    tensors = tuple(t for t in slots if t is not None)
    return (source, name, tensors) if source or tensors else None


def _fake(q, k, v, cu_seqlens_q, cu_seqlens_k, alibi_slopes, sinks, attn_bias,
          causal, window_left,
          window_right, softcap, scale, threads, target, kernel, dropout_p,
          dropout_seed, dropout_offset, variant, variant_name, variant_tensor0,
          variant_tensor1, variant_tensor2, variant_tensor3):
    out = q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],))
    lse = q.new_empty(_lse_shape(q, cu_seqlens_q is not None), dtype=torch.float32)
    return out, lse


def _setup_context(ctx, inputs, output):
    (q, k, v, cu_q, cu_k, slopes, sinks, attn_bias, *keywords, variant, _name,
     _tensor0, _tensor1, _tensor2, _tensor3) = inputs
    ctx.save_for_backward(q, k, v, *output, cu_q, cu_k, slopes)
    ctx.keywords = keywords
    # The backward has no gradients for them, nor runs with them (C++:
    # planBackward refuses Problem::sink and Problem::bias; _backward
    # passes no variant).
    given = (("sinks", sinks is not None), ("attn_bias", attn_bias is not None),
             ("variant", variant != ""))
    ctx.unsupported = [name for name, present in given if present]
    ctx.set_materialize_grads(False)  # an unused LSE's gradient stays None


def _backward(ctx, grad_out, grad_lse):
    if grad_lse is not None:
        raise NotImplementedError(
            "fmhajit's backward takes the gradient of out only; the loss "
            "depends on the returned lse, which has none")
    if ctx.unsupported:
        raise NotImplementedError(
            f"fmhajit's backward does not support {' and '.join(ctx.unsupported)} "
            f"yet (it has no gradient of the sinks, the bias or a variant's "
            f"tensors, and its kernels do not apply them): run this forward "
            f"under torch.no_grad(), or without {' and '.join(ctx.unsupported)}")
    q, k, v, out, lse, cu_q, cu_k, slopes = ctx.saved_tensors
    (causal, left, right, softcap, scale, threads, target, kernel, dropout_p,
     dropout_seed, dropout_offset) = ctx.keywords
    from . import _backward as run_backward
    grads = run_backward(q, k, v, out, lse, grad_out, causal, _window(left, right),
                         softcap, slopes, scale, cu_q, cu_k, threads, target, kernel,
                         _dropout_tuple(dropout_p, dropout_seed, dropout_offset))
    return tuple(grads) + (None,) * 22  # one per input after q, k, v


if HAS_OP:
    attention_op = torch.library.custom_op("fmhajit::attention", _forward, mutates_args=())
    attention_op.register_fake(_fake)
    attention_op.register_autograd(_backward, setup_context=_setup_context)


def attention_op_call(q, k, v, causal, window, softcap, alibi_slopes, scale,
                      return_lse, cu_seqlens_q, cu_seqlens_k, threads, target,
                      kernel, dropout, sinks=None, attn_bias=None,
                      variant_call=None):
    """fmhajit.attention's arguments -> the op's; dropout is the resolved
    (p, seed, offset) or None, variant_call fmhajit._variant_call's tuple
    or None. sinks become float32 on q's device (a tensor so made stays
    the caller's, with its autograd); attn_bias and the variant's tensors
    must be tensors or become ones on q's device (their dtypes are checked
    by the op, as fmhajit.attention's)."""
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
    variant, variant_name, tensors = variant_call or ("", "", ())
    # fmhajit._variant_call allows at most the op's four slots.
    slots = [torch.as_tensor(t, device=q.device) for t in tensors]
    slots += [None] * (4 - len(slots))
    out, lse = torch.ops.fmhajit.attention(
        q, k, v, cu_q, cu_k, slopes, sinks, attn_bias, bool(causal), left, right,
        float(softcap or 0.0), float(scale or 0.0), int(threads or 0),
        target or "", kernel or "", p, seed, offset, variant, variant_name, *slots)
    return (out, lse) if return_lse else out
