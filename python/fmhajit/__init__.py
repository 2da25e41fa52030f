"""fmhajit: fused multi-head attention, compiled just in time.

    import numpy as np, fmhajit
    q = np.random.randn(2, 128, 8, 64).astype(np.float32)   # [batch, seq, heads, d]
    k = v = np.random.randn(2, 128, 2, 64).astype(np.float32)  # 2 K/V heads: GQA
    o = fmhajit.attention(q, k, v, causal=True)

Arrays come in through DLPack (NumPy, PyTorch on the CPU or CUDA, ...); the
result is the same kind of array on the same device. Each distinct problem is
planned once per process through the public C++ API (the dispatcher, split-KV
for decode shapes, the kernel cache shared with the `fmhajit` command line),
and every call after that only runs the plan. docs/python.md has the rest.
"""

import json as _json
import sys as _sys

import numpy as _np

from . import _after_import, _arrays
from ._call_args import _dropout, _variant_call
from ._fmhajit import __version__
from . import _fmhajit

_torch_glue = None  # fmhajit._torch, once torch is imported (_use_torch_glue)


def _compiling_before_torch():
    """_compiling until fmhajit._torch is loaded: nothing compiles before
    torch is imported; once it is, the glue is loaded (registering the op)
    and asked, as it is at every call after."""
    if "torch" not in _sys.modules:
        return False
    _use_torch_glue()
    return _compiling()


# Whether torch.compile is tracing fmhajit.attention (which must then go
# through the op, not the C++ entry it cannot trace): fmhajit._torch's
# compiling, torch.compiler.is_compiling itself where the op exists.
_compiling = _compiling_before_torch


def _use_torch_glue():
    """Loads fmhajit._torch, which registers torch.ops.fmhajit.attention
    (and has torch.compile trace attention as _python_attention)."""
    global _torch_glue, _compiling, attention
    from . import _torch
    _torch_glue, _compiling = _torch, _torch.compiling
    if _torch.FLAG_ANSWER is not None:  # read, not called, by the C function
        _fmhajit.answer_compiling(_torch.compiling, *_torch.FLAG_ANSWER)
    if not _torch.TRACES_C_ATTENTION:
        attention = _python_attention  # PyTorch 2.4: compile traces this one

__all__ = [
    "attention", "plan", "name", "decode", "validate", "compile", "warmup",
    "tolerance", "to_bf16", "from_bf16", "cached_plans", "clear_plans",
]


def attention(q, k, v, *, causal=False, window=None, softcap=None,
              alibi_slopes=None, scale=None, return_lse=False,
              cu_seqlens_q=None, cu_seqlens_k=None, out=None, lse=None,
              threads=None, target=None, kernel=None, cache_dir=None,
              dropout_p=0.0, dropout_seed=None, dropout_offset=0, sinks=None,
              attn_bias=None, variant=None, variant_tensors=None):
    """softmax(scale * q k^T + modifiers) v, FlashAttention's conventions.

    q [batch, seqlen_q, heads_q, d], k [batch, seqlen_k, heads_kv, d], v
    [batch, seqlen_k, heads_kv, dv]; with cu_seqlens_q/k (int32 [batch + 1])
    the sequences are packed: q [total_q, heads_q, d] and so on. heads_q a
    multiple of heads_kv is GQA. causal is aligned bottom-right (the last
    query sees every key); window=(left, right) keeps keys within left before
    and right after that diagonal (-1: unbounded). Returns out
    [..., heads_q, dv] in q's dtype (or writes the given out=, which may be
    float32 for fp16/bf16 inputs), and with return_lse also the float32
    log-sum-exp [batch, heads_q, seqlen_q] ([heads_q, total_q] varlen).

    sinks: float32 [heads_q], one learnable logit per query head that joins
    the softmax's denominator and the lse with no value row (gpt-oss); -inf
    is a head without a sink. attn_bias: a float32 bias added to the scores
    after the softcap, before the mask (SDPA's float attn_mask), of any
    shape that broadcasts to [batch, heads_q, seqlen_q, seqlen_k] as NumPy
    broadcasts: [1, 1, Sq, Sk], [B, 1, 1, Sk] key padding (-inf on padded
    keys), the full shape. Both on q's device; not with varlen or ALiBi
    (the bias), and without gradients (the backward has none yet).

    dropout_p > 0 drops each attention probability with that probability
    (kept ones scaled by 1 / (1 - p); the lse is the softmax's before
    dropout). The keep-mask is Philox4x32-10 of each element's position
    under dropout_seed (0 to 2^63-1; None draws one per call from the
    arrays' library's generator: torch.randint for tensors, NumPy's
    np.random otherwise) and dropout_offset (0 to 2^32-1, one of 2^32
    streams of a seed). dropout_p = 0 runs the kernel without dropout.

    variant: C++ source (a str) defining score_mod and/or mask_mod, compiled
    by clang into the kernel (docs/variants.md), or a pathlib.Path of a file
    holding it, read at each call. variant_tensors: a list or tuple of the
    float32 arrays its fmhajit_tensor(slot, index) reads, in slot order (as
    many as it reads, at most 4), contiguous, read flat, on q's device.
    """
    # fmhajit.attention is the C function made from this def below
    # (python/src/AttentionFunction.h), which does what this body does with
    # no Python frame; the def raises its binding errors, and torch.compile
    # traces it in the C function's place (fmhajit/_torch.py). The common
    # call runs in one C++ entry, which answers NotImplemented for every
    # other (python/src/AttentionCall.h). Inside torch.compile the op must
    # be seen instead.
    if not _compiling():
        made = _fmhajit.attention_call(
            q, k, v, causal, window, softcap, alibi_slopes, scale, return_lse,
            cu_seqlens_q, cu_seqlens_k, out, lse, threads, target, kernel,
            cache_dir, dropout_p, sinks, attn_bias, variant, variant_tensors)
        if made is not NotImplemented:
            return made
    return _any_attention(q, k, v, causal, window, softcap, alibi_slopes, scale,
                          return_lse, cu_seqlens_q, cu_seqlens_k, out, lse,
                          threads, target, kernel, cache_dir, dropout_p,
                          dropout_seed, dropout_offset, sinks, attn_bias,
                          variant, variant_tensors)


# A call on a cached plan must cost little more than the C++ run
# (bench/python/overhead.py): fmhajit.attention is a C function with the
# def's signature, doc and defaults (python/src/AttentionFunction.h).
_python_attention = attention
attention = _fmhajit.make_attention(_python_attention, _sys.modules[__name__])


def _on_dynamo():
    """Once torch._dynamo is loaded (torch.compile loads it before it traces):
    the glue, and Dynamo told to trace attention's def in its place. Not
    while torch itself is still being imported (the glue imports torch's
    parts; it registers when it loads at the first call), and never raising
    into the import that ran it."""
    torch_spec = getattr(_sys.modules.get("torch"), "__spec__", None)
    if getattr(torch_spec, "_initializing", False):
        return
    try:
        _use_torch_glue()
        _torch_glue._trace_attention_as_python()
    except Exception as error:  # noqa: BLE001
        import warnings
        warnings.warn(f"fmhajit: torch.compile cannot trace fmhajit.attention "
                      f"({error}); a compiled call breaks the graph there")


if "torch" in _sys.modules:  # register torch.ops.fmhajit.attention now
    _use_torch_glue()
_after_import.call_after_import("torch._dynamo", _on_dynamo)


def _any_attention(q, k, v, causal, window, softcap, alibi_slopes, scale,
                   return_lse, cu_seqlens_q, cu_seqlens_k, out, lse, threads,
                   target, kernel, cache_dir, dropout_p, dropout_seed,
                   dropout_offset, sinks, attn_bias, variant, variant_tensors):
    """attention(), any call: through the op, or the Python paths below."""
    dropout = None
    if dropout_p:
        dropout = _dropout(dropout_p, dropout_seed, dropout_offset,
                           _torch_module_of(q))
    variant_call = None  # (source, name, tensors) for _fmhajit.attention_with_variant
    if variant is not None or variant_tensors is not None:
        variant_call = _variant_call(variant, variant_tensors)
    if type(q) is _np.ndarray and q.dtype in _NUMPY_DIRECT:
        # NumPy calls the C++ entry declines (varlen, ALiBi, sinks, a bias,
        # dropout, a variant, an LSE to make), kept short.
        if out is None:
            out = _np.empty(q.shape[:-1] + v.shape[-1:], q.dtype)
        if return_lse and lse is None:
            lse = _np.empty(_lse_shape(q, cu_seqlens_q is not None), _np.float32)
        if (cu_seqlens_q is None and cu_seqlens_k is None and alibi_slopes is None
                and sinks is None and attn_bias is None):
            arrays = (out, lse, None, None, None, None, None, None, None, None)
        else:
            arrays = _arrays_tuple(_arrays.NumpyKind(q), out, lse, cu_seqlens_q,
                                   cu_seqlens_k, alibi_slopes, sinks, attn_bias)
        keywords = _keywords(causal, window, softcap, scale, alibi_slopes,
                             threads, target, kernel, cache_dir, _NO_STREAMS)
        if variant_call is None:
            _fmhajit.attention(q, k, v, arrays, keywords, None, dropout)
        else:
            _fmhajit.attention_with_variant(q, k, v, arrays, keywords, None, dropout,
                                            variant_call)
        return (out, lse) if return_lse else out
    glue = _torch_glue_for(q)
    if glue is not None:
        tensor = glue.torch.Tensor
        # Plain tensors without cu_seqlens, slopes, sinks, a bias or a
        # variant take a short path (_torch_attention); q, k and v's
        # requires_grad are then read as attributes of plain tensors.
        plain = (type(q) is tensor and type(k) is tensor and type(v) is tensor
                 and (out is None or type(out) is tensor)
                 and (lse is None or type(lse) is tensor)
                 and cu_seqlens_q is None and cu_seqlens_k is None
                 and alibi_slopes is None and sinks is None
                 and attn_bias is None and variant_call is None)
        if plain:
            grad = q.requires_grad or k.requires_grad or v.requires_grad
        else:
            grad = glue.requires_grad(q, k, v, sinks, attn_bias, variant_call)
        if glue.use_op(grad):
            return glue.attention_op_call(
                q, k, v, causal, window, softcap, alibi_slopes, scale,
                return_lse, cu_seqlens_q, cu_seqlens_k, threads, target, kernel,
                dropout, sinks, attn_bias, variant_call)
        if plain:
            return _torch_attention(glue, q, k, v, causal, window, softcap,
                                    scale, return_lse, out, lse, threads, target,
                                    kernel, cache_dir, dropout, grad)
    return _attention(q, k, v, causal, window, softcap, alibi_slopes, scale,
                      return_lse, cu_seqlens_q, cu_seqlens_k, out, lse,
                      threads, target, kernel, cache_dir, dropout, sinks,
                      attn_bias, variant_call)


def _torch_module_of(q):
    """torch when q is a tensor (its seeds come from torch's generator)."""
    glue = _torch_glue_for(q)
    return None if glue is None else glue.torch


def _torch_glue_for(q):
    """fmhajit._torch when q is a torch.Tensor, else None. Only module
    globals and isinstance once loaded, which torch.compile traces through."""
    if _torch_glue is None:
        if _arrays.torch_of(q) is None:
            return None
        _use_torch_glue()
    return _torch_glue if isinstance(q, _torch_glue.torch.Tensor) else None


def _attention(q, k, v, causal, window, softcap, alibi_slopes, scale,
               return_lse, cu_seqlens_q, cu_seqlens_k, out, lse, threads,
               target, kernel, cache_dir, dropout, sinks=None, attn_bias=None,
               variant_call=None):
    """The general path; variant_call is _variant_call's tuple or None."""
    # ml_dtypes' bfloat16 cannot leave NumPy through DLPack: run its bits.
    ml_bf16 = q.dtype if _arrays.is_bf16_numpy(q) else None
    if ml_bf16 is not None:
        q, k, v, out = (_arrays.bf16_bits(x) for x in (q, k, v, out))
    kind = _arrays.kind_of(q if out is None else out)
    if out is None:
        out = kind.empty(_out_shape(q, v), q)
    if return_lse and lse is None:
        lse = kind.empty(_lse_shape(q, cu_seqlens_q is not None), q, float32=True)
    if isinstance(kind, _arrays.TorchKind):
        # DLPack refuses tensors with grad (and reading tensors directly
        # leaves them to it).
        q, k, v, attn_bias = (_detached(x) for x in (q, k, v, attn_bias))
        if variant_call is not None:
            source, name, tensors = variant_call
            variant_call = (source, name, tuple(_detached(t) for t in tensors))
    arrays = _arrays_tuple(kind, out, lse, cu_seqlens_q, cu_seqlens_k, alibi_slopes,
                           sinks, attn_bias)
    operands = (q, k, v, out) if attn_bias is None else (q, k, v, out, attn_bias)
    if variant_call is not None:
        operands += variant_call[2]
    keywords = _keywords(causal, window, softcap, scale, alibi_slopes, threads,
                         target, kernel, cache_dir, kind.streams_for(*operands))
    if variant_call is None:
        _fmhajit.attention(q, k, v, arrays, keywords, kind.workspace, dropout)
    else:
        _fmhajit.attention_with_variant(q, k, v, arrays, keywords, kind.workspace,
                                        dropout, variant_call)
    if ml_bf16 is not None:
        out = out.view(ml_bf16)
    return (out, lse) if return_lse else out


def _detached(x):
    return x.detach() if getattr(x, "requires_grad", False) else x


def _torch_attention(glue, q, k, v, causal, window, softcap, scale,
                     return_lse, out, lse, threads, target, kernel, cache_dir,
                     dropout, grad):
    """_attention for plain tensors (torch.Tensor itself) without cu_seqlens
    or ALiBi slopes, as a TorchKind would run it with less on the way: the
    calls of plain tensors that the C++ entry declines (an LSE to make,
    dropout, a window, inputs that require grad under no_grad, CUDA
    tensors of a torch without DLPack's exchange API). glue is
    fmhajit._torch; grad: whether q, k or v requires grad (the op was not
    wanted: grad mode is off). An out of None is made by the compiled half,
    which reads q anyway (python/src/Calls.h): q.new_empty here would cost
    its shape, and the compiled half's reading of the new tensor."""
    torch = glue.torch
    like = q if out is None else out
    streams, workspace = _NO_STREAMS, None
    # Where torch.Tensor has DLPack's exchange API, the compiled half asks
    # torch for the current stream and a CUDA plan's workspace itself
    # (python/src/ExchangeApi.h): none is passed.
    if not glue.EXCHANGE and like.is_cuda:
        # Every array is a tensor ordered on the current stream: -1 for
        # __dlpack__ (TorchKind.streams_for).
        streams = (_arrays.current_stream(torch, like.get_device()), -1)
        def workspace(nbytes):  # TorchKind._workspace's
            return torch.empty(nbytes, dtype=torch.uint8, device=like.device)
    if return_lse and lse is None:
        lse = like.new_empty(_lse_shape(q, False), dtype=torch.float32)
    keywords = _keywords(causal, window, softcap, scale, None, threads, target,
                         kernel, cache_dir, streams)
    if grad:  # DLPack refuses them, and reading them directly leaves them to it
        q, k, v = (x.detach() if x.requires_grad else x for x in (q, k, v))
    arrays = (out, lse, None, None, None, None, None, None, None, None)
    out = _fmhajit.attention(q, k, v, arrays, keywords, workspace, dropout)
    return (out, lse) if return_lse else out


def _backward(q, k, v, out, lse, grad_out, causal, window, softcap,
              alibi_slopes, scale, cu_seqlens_q, cu_seqlens_k, threads, target,
              kernel, dropout=None):
    """(dq, dk, dv) of out = attention(q, k, v) for PyTorch tensors, through
    the backward plan; every gradient in out's dtype, laid out packed.
    dropout: the forward's (p, seed, offset), or None."""
    q, k, v, out, grad_out = (x.detach().contiguous() for x in (q, k, v, out, grad_out))
    lse = lse.detach()  # an output of the op: it may require grad, and DLPack refuses that
    kind = _arrays.kind_of(q)
    dq, dk, dv = (kind.torch.empty_like(x, dtype=out.dtype) for x in (q, k, v))
    arrays = _arrays_tuple(kind, out, lse, cu_seqlens_q, cu_seqlens_k, alibi_slopes)
    keywords = _keywords(causal, window, softcap, scale, alibi_slopes, threads,
                         target, kernel, None, kind.streams_for(q, k, v, out))
    _fmhajit.backward(q, k, v, arrays, (grad_out, dq, dk, dv), keywords,
                      kind.workspace, dropout)
    return dq, dk, dv


def _out_shape(q, v):
    shape, dv = q.shape, v.shape[-1]
    return shape if shape[-1] == dv else tuple(shape[:-1]) + (dv,)


def _lse_shape(q, varlen):
    if len(q.shape) != (3 if varlen else 4):
        return (0,)  # the shape check names the problem with q
    if varlen:
        return (q.shape[1], q.shape[0])
    return (q.shape[0], q.shape[2], q.shape[1])


def _arrays_tuple(kind, out, lse, cu_seqlens_q, cu_seqlens_k, alibi_slopes,
                  sinks=None, attn_bias=None):
    """The optional arrays, in the order python/src/Calls.h gives. sinks
    become float32 on q's device (like alibi_slopes, from a list too);
    attn_bias goes as it is (fp32 required: a silent copy of a large bias
    would hide its cost)."""
    cu_q = cu_k = slopes = (None, None)
    if cu_seqlens_q is not None:
        cu_q = kind.host_vector(cu_seqlens_q, _np.int32)
    if cu_seqlens_k is not None:
        cu_k = kind.host_vector(cu_seqlens_k, _np.int32)
    if alibi_slopes is not None:
        slopes = kind.host_vector(alibi_slopes, _np.float32)
    if sinks is not None:
        sinks = kind.device_vector(sinks)
    return (out, lse, cu_q[0], cu_k[0], cu_q[1], cu_k[1], slopes[0], slopes[1],
            sinks, attn_bias)


def _mask(causal, window):
    """(mask, left, right) for the API: causal bottom-right, as in
    FlashAttention, and a window that causal clips on the right."""
    if window is None or tuple(window) == (-1, -1):
        return ("causal_br" if causal else "none"), -1, -1
    left, right = (int(w) for w in window)
    if causal:
        if right not in (0, -1):
            raise ValueError(
                f"window=({left}, {right}) with causal=True: a causal window "
                f"sees no key after the diagonal; give right 0 or -1")
        right = 0
    return "window", left, right


# NumPy dtypes fmhajit reads as they are (uint16: bf16 bits).
_NUMPY_DIRECT = frozenset(_np.dtype(t) for t in (_np.float32, _np.float16, _np.uint16))
_KEYWORDS = {}  # memo of _keywords for hashable arguments


_NO_STREAMS = (None, None)  # host arrays


def _keywords(causal, window, softcap, scale, alibi_slopes, threads, target,
              kernel, cache_dir, streams):
    """The keywords, in the order python/src/Calls.h gives; streams is
    (the API's stream, the stream given to __dlpack__)."""
    key = (causal, window, softcap, scale, alibi_slopes is None, threads,
           target, kernel, cache_dir, streams)
    try:
        return _KEYWORDS[key]
    except KeyError:
        pass
    except TypeError:  # a window given as a list
        key = None
    made = _make_keywords(causal, window, softcap, scale, alibi_slopes,
                          threads, target, kernel, cache_dir, streams)
    if key is not None and len(_KEYWORDS) < 1024:
        _KEYWORDS[key] = made
    return made


def _make_keywords(causal, window, softcap, scale, alibi_slopes, threads,
                   target, kernel, cache_dir, streams):
    mask, left, right = _mask(causal, window)
    return (mask, left, right, float(softcap or 0.0), float(scale or 0.0),
            alibi_slopes is not None, int(threads or 0), target or "",
            kernel or "", cache_dir or "") + tuple(streams)


def plan(q, k, v, *, causal=False, window=None, softcap=None,
         alibi_slopes=None, scale=None, return_lse=False, cu_seqlens_q=None,
         cu_seqlens_k=None, threads=None, target=None, kernel=None,
         cache_dir=None, device=None, load=False, autotune=False,
         backward=False, dropout_p=0.0, sinks=None, attn_bias=None,
         variant=None):
    """The plan attention() would run for these arrays, as a dict: target,
    device, steps (kernel, role, grid, why, and how each was loaded),
    decisions (the dispatcher's rules), workspace_bytes, describe (the text
    of `fmhajit plan`). Only the shapes, dtypes and strides of the arrays are
    read. device="cuda" (with target="sm_90a", say) plans for a GPU from host
    arrays; load=True compiles the kernels; backward=True plans the
    gradients instead. dropout_p != 0 plans with dropout (its value, the
    seed and the offset are run-time arguments: they do not change a
    plan); so do sinks (their values) and attn_bias (its shape and strides
    matter, not its values). variant (attention's) plans with it; the
    dict's variant_tensors says how many tensors a run of it takes."""
    kind = _arrays.kind_of(q)
    out = kind.empty(_out_shape(q, v), q)
    lse = kind.empty(_lse_shape(q, cu_seqlens_q is not None), q, True) if return_lse else None
    arrays = _arrays_tuple(kind, out, lse, cu_seqlens_q, cu_seqlens_k, alibi_slopes,
                           sinks, attn_bias)
    keywords = _keywords(causal, window, softcap, scale, alibi_slopes, threads,
                         target, kernel, cache_dir, kind.streams_for(q, k, v, out))
    dropout = _dropout(dropout_p, 0, 0, None) if dropout_p else None
    variant_call = None if variant is None else _variant_call(variant, None)
    return _fmhajit.plan(q, k, v, arrays, keywords, device, load, autotune,
                         backward, dropout, variant_call)


def _spec_text(spec):
    return spec if isinstance(spec, str) else _json.dumps(spec)


def validate(spec):
    """Checks a spec ("key=value,..." or a dict of the same keys). Returns
    {"name", "resolved" (key=value text), "spec" (every key, as a dict)};
    raises ValueError with one line per problem."""
    name_, resolved, spec_json = _fmhajit.validate(_spec_text(spec))
    return {"name": name_, "resolved": resolved, "spec": _json.loads(spec_json)}


def name(spec):
    """The encoded name of a spec (docs/names.md)."""
    return validate(spec)["name"]


def decode(name_):
    """The spec an encoded name stands for, as a dict."""
    return _json.loads(_fmhajit.decode(name_)[2])


def compile(spec, emit="llvm", target=None):  # noqa: A001 (fmhajit compile)
    """One stage of a spec's compilation: "llvm", "opt", "asm" (PTX for
    NVIDIA) as text, "obj" as bytes. target replaces the spec's."""
    return _fmhajit.compile(_spec_text(spec), emit, target or "")


def warmup(profile, target, cache_dir=None):
    """Compiles a profile's kernels ("smoke", "dispatch", ...: `fmhajit
    list`; several: "decode,training") for target ("host", "sm_90a", ...),
    each spec in its default tile and every tile the dispatcher can pick,
    with the kernels plans run in their place or beside them (`fmhajit list
    --warm`), into the kernel cache (cache_dir, else the default), several at
    once, so that first calls find them compiled. Raises ValueError naming an
    unknown profile or target, and NotImplementedError listing the kernels
    that failed to compile."""
    _fmhajit.warmup(profile, target, cache_dir or "")


def tolerance(dtype, out_dtype=None, gradients=False):
    """The accuracy fmhajit holds its kernels to against a float64
    reference on the same rounded inputs: {"rel_l2", "max_abs", "lse_rel"}
    for inputs of dtype ("fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")
    and outputs of out_dtype (default: dtype, bf16 for fp8); with
    gradients, that of the backward's dq, dk and dv."""
    if out_dtype is None:
        out_dtype = "bf16" if dtype.startswith("fp8") else dtype
    rel_l2, max_abs, lse_rel = _fmhajit.accuracy(dtype, out_dtype, gradients)
    return {"rel_l2": rel_l2, "max_abs": max_abs, "lse_rel": lse_rel}


def to_bf16(array):
    """float32 values -> bfloat16 bit patterns in uint16 (round to nearest
    even): how bf16 arrives from NumPy, which has no bfloat16."""
    bits = _np.ascontiguousarray(array, dtype=_np.float32).view(_np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    nan = _np.isnan(_np.asarray(array, dtype=_np.float32))
    return _np.where(nan, 0x7FC0, rounded >> 16).astype(_np.uint16)


def from_bf16(bits):
    """bfloat16 bit patterns in uint16 -> float32 values (exact)."""
    wide = _np.ascontiguousarray(bits, dtype=_np.uint16).astype(_np.uint32) << 16
    return wide.view(_np.float32)


def cached_plans():
    """How many plans this process keeps (one per distinct problem)."""
    return _fmhajit.cached_plans()


def clear_plans():
    """Forgets every kept plan (their kernels stay in the kernel cache)."""
    _fmhajit.clear_plans()
