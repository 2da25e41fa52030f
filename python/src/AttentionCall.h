//===- AttentionCall.h - fmhajit.attention's common call in one entry ----===//
//
// A call on a cached plan must cost little more than the C++ api::run
// (issue 15: 5 us at most, bench/python/overhead.py,
// bench/gpu/bench_python.py). The common call (NumPy arrays or plain torch
// tensors, no gradient wanted, the keywords as plain values, none of the
// optional arrays, no dropout, no variant) is read, checked, planned once
// and run here, by one C function of the vectorcall convention: no Python
// frame between the caller and this one, no tuple or dict built, no
// pybind11 dispatch.
//
// fmhajit.attention (AttentionFunction.h) binds its arguments and passes
// them in its signature's order less dropout_seed and dropout_offset
// (which dropout_p = 0 leaves unread); attention_call, the same entry for
// the tests, takes them so:
//
//   attention_call(q, k, v, causal, window, softcap, alibi_slopes, scale,
//                  return_lse, cu_seqlens_q, cu_seqlens_k, out, lse,
//                  threads, target, kernel, cache_dir, dropout_p, sinks,
//                  attn_bias, variant, variant_tensors)
//
// and gets out (or (out, lse)), or NotImplemented where the call is not
// the common one: the Python path (fmhajit/__init__.py's _any_attention)
// then runs it as before, with its messages. Every argument this entry
// takes is read as the Python path reads it, so a call gets the same
// answer on both (and the same errors: those of the arrays and the API
// come from the same C++ either way).
//
// The common call: causal a bool; window, alibi_slopes, cu_seqlens_q/k,
// sinks, attn_bias, variant and variant_tensors None; softcap and scale
// None, a float or an int; threads None or an int; target, kernel and
// cache_dir None or a str; dropout_p 0 (or False); return_lse False, or
// True with lse given. And either q a NumPy array of float32, float16 or
// uint16 (k, v, out and lse any arrays), or q, k, v (and out and lse where
// given) plain torch.Tensors, none requiring grad, with q on the host or
// read through DLPack's exchange API (PyTorch 2.11: a CUDA call then runs
// on torch's current stream, ExchangeApi.h). A CUDA tensor of an older
// torch takes the Python path, which passes torch's stream.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Python.h>

namespace fmhajit::python {

/// attention_call's number of arguments.
constexpr Py_ssize_t kCommonCallArgs = 22;

/// The common call of attention_call's arguments: a new reference to out
/// or (out, lse), to NotImplemented where the call is not the common one,
/// or nullptr with the error set.
PyObject *runCommonCall(PyObject *const *args);

/// The method definition of attention_call, for the module's functions.
extern PyMethodDef attentionCallMethod;

} // namespace fmhajit::python
