//===- Calls.h - What fmhajit.attention and fmhajit.plan run --------------===//
//
// The Python layer passes each call's optional arrays and its keywords as
// two tuples in a fixed order (fmhajit/__init__.py, _call_tuples), which
// costs far less to build and read than keyword arguments:
//
//   arrays   (out, lse, cu_seqlens_q, cu_seqlens_k, cu_seqlens_q_device,
//             cu_seqlens_k_device, alibi_slopes, alibi_slopes_device,
//             sinks, attn_bias)
//   keywords (mask, window_left, window_right, softcap, scale, alibi,
//             threads, target, kernel, cache_dir, stream, export_stream)
//
// mask is "none", "causal", "causal_br" or "window"; stream (the API's) and
// export_stream (given to __dlpack__) are None or a CUDA stream as an int.
// Where both are None and q's type has DLPack's C exchange API (PyTorch
// 2.11's torch.Tensor), a CUDA call takes that library's current work
// stream of q's device and reads its arrays without synchronizing
// (ExchangeApi.h); a CUDA plan's workspace then comes from its allocator
// where no workspace allocator is given.
// The arrays may be None where the Python layer has nothing to pass.
// sinks and attn_bias are on q's device (the kernels read them). attention
// makes out where it is None and q is a plain torch.Tensor or a NumPy
// array: it reads q anyway, so the new array's view is q's (TorchTensor.h,
// newTorchOutput; NumpyArray.h), where one made in Python would be read
// like any other.
//
// dropout, apart from the keywords (the Python layer memoizes those, and a
// seed changes with every call), is None or (p, seed, offset): the problem
// then has Problem::dropout and each run gets Tensors::dropout.
//
// variant, an argument of its own (attention_with_variant, so that a plain
// call's binding and its cost stay as they were), is (source, name,
// tensors): a variant's C++ source (Problem::variant), its name in clang's
// messages ("" for the API's "variant.cpp") and the tuple of fp32 arrays
// its fmhajit_tensor reads, in slot order, on q's device
// (Tensors::variantTensors). plan() takes None or the same (it reads no
// tensor).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "python/src/CallArgs.h"
#include <pybind11/pybind11.h>

namespace fmhajit::python {

/// Options::threads from a call's threads (0: one per hardware thread);
/// raises ValueError outside 0 to 65536.
unsigned threadCount(int64_t threads);

/// Plans (once per problem: PlanCache) and runs one attention, writing
/// out (and lse) in place, and returns out (the one given, or the one
/// made). \p workspace, called with a byte count, returns device memory for
/// a CUDA plan that needs a workspace.
pybind11::object runAttention(pybind11::handle q, pybind11::handle k,
                              pybind11::handle v, pybind11::tuple arrays,
                              pybind11::tuple keywords,
                              pybind11::object workspace,
                              pybind11::object dropout);

/// runAttention with a variant (and its tensors), \p variant as above.
pybind11::object
runAttentionWithVariant(pybind11::handle q, pybind11::handle k,
                        pybind11::handle v, pybind11::tuple arrays,
                        pybind11::tuple keywords, pybind11::object workspace,
                        pybind11::object dropout, pybind11::tuple variant);

/// The common call of fmhajit.attention (AttentionCall.h): q, k, v, and
/// out and lse or None, with its keywords read into \p kw (no dropout, no
/// variant; a CUDA call sets its stream); runs as runAttention does with no
/// workspace allocator (a CUDA plan's workspace comes from q's exchange
/// API), making out where it is None: a plain tensor's or a NumPy array's.
/// \p grad NotRequired: q, k and v are plain tensors the caller found not
/// to require grad. Returns out.
pybind11::object runCommonAttention(pybind11::handle q, pybind11::handle k,
                                    pybind11::handle v, pybind11::handle out,
                                    pybind11::handle lse, CallKeywords &kw,
                                    GradKnown grad);

/// The gradients of such a call: \p arrays must hold out and lse as the
/// forward wrote them; \p grads is (dO, dQ, dK, dV), dQ..dV written.
void runBackward(pybind11::handle q, pybind11::handle k, pybind11::handle v,
                 pybind11::tuple arrays, pybind11::tuple grads,
                 pybind11::tuple keywords, pybind11::object workspace,
                 pybind11::object dropout);

/// The plan of such a call as a dict (describe, steps, decisions...).
/// \p device ("host", "cuda" or None: the arrays') and \p load, \p autotune
/// go to the Options; \p backward plans the backward pass instead; a
/// \p dropout tuple plans with dropout (its values do not change a plan);
/// a \p variant plans with it (its tensors, if any, are not read).
pybind11::dict describePlan(pybind11::handle q, pybind11::handle k,
                            pybind11::handle v, pybind11::tuple arrays,
                            pybind11::tuple keywords, pybind11::object device,
                            bool load, bool autotune, bool backward,
                            pybind11::object dropout, pybind11::object variant);

/// How many plans the process keeps, and forgetting them.
size_t cachedPlans();
void clearPlans();

} // namespace fmhajit::python
