//===- CallArgs.h - One fmhajit.attention call, in the API's terms
//---------===//
//
// The Python layer (fmhajit/__init__.py) resolves keywords (causal ->
// Mask::CausalBottomRight, window tuples, defaults) and allocates outputs;
// this side imports the arrays through DLPack, checks that their shapes
// agree, and fills in the public API's Problem, Options and Tensors. A
// call without out (attention makes a plain tensor's: Calls.h) checks
// the inputs alone; the out made from them fits.
//
//   q   [batch, seqlen_q, heads_q, d]      or, with cu_seqlens, [total_q, ...]
//   k   [batch, seqlen_k, heads_kv, d]        [total_k, heads_kv, d]
//   v   [batch, seqlen_k, heads_kv, dv]       [total_k, heads_kv, dv]
//   out [batch, seqlen_q, heads_q, dv]        [total_q, heads_q, dv]
//   lse [batch, heads_q, seqlen_q] fp32       [heads_q, total_q]
//   sinks     [heads_q] fp32, on q's device (Tensors::sinks)
//   attn_bias fp32, broadcastable to [batch, heads_q, seqlen_q, seqlen_k]
//             as NumPy broadcasts (Tensors::bias at BiasStrides)
//   variant tensors  fp32 of any shape, packed, on q's device: what the
//             variant's fmhajit_tensor reads flat (Tensors::variantTensors)
//
// Any strides with a contiguous last dim are passed as
// TensorLayout::strided, so slices and transposed views need no copy.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "python/src/ArrayView.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit::python {

/// The keywords of a call, as plain values.
struct CallKeywords {
  api::Mask mask = api::Mask::None;
  int64_t windowLeft = -1, windowRight = -1;
  float softcap = 0, scale = 0;
  bool alibi = false;
  /// Dropout's p, seed and offset (Problem::dropout); none: no dropout.
  std::optional<api::Dropout> dropout;
  std::optional<intptr_t> stream; ///< CUDA: the caller's current stream
  /// The stream passed to each array's __dlpack__ (importArray), so that
  /// its producer orders its work before the call's; -1 where the arrays'
  /// work is on `stream` already (PyTorch's current stream), which spares
  /// each export the producer's stream check.
  std::optional<intptr_t> exportStream;
  /// Where set, `stream` is the current work stream of this array type's
  /// library (DLPack's exchange API, Calls.cpp): arrays of that type are
  /// read without synchronizing (-1), others are exported with `stream`.
  PyTypeObject *streamOwner = nullptr;
  api::Options options;
  /// plan() only: plan for this device instead of the arrays'.
  std::optional<api::Device> device;
  /// The variant's C++ source (empty: none) and its name in messages
  /// (empty: the API's "variant.cpp").
  std::string variant, variantName;
};

/// The arrays of a call. Optional ones are absent when Python passed None.
struct CallArrays {
  ArrayView q, k, v;
  std::optional<ArrayView> out, lse;
  /// Host int32 copies (the plan reads them), and on CUDA the device copies
  /// the kernels read.
  std::optional<ArrayView> cuSeqlensQ, cuSeqlensK;
  std::optional<ArrayView> cuSeqlensQDevice, cuSeqlensKDevice;
  /// Host fp32 slopes [heads_q], and on CUDA their device copy.
  std::optional<ArrayView> alibiSlopes, alibiSlopesDevice;
  /// Attention sinks [heads_q] fp32 and the elementwise bias, both on q's
  /// device: the kernels read them at run time (the plan keeps no copy).
  std::optional<ArrayView> sinks, bias;
  /// The variant's run-time tensors in slot order, on q's device.
  std::vector<ArrayView> variantTensors;
};

/// The gradients of a backward call: dO like out, dQ, dK, dV like q, k, v
/// (shapes and strides), all four in out's dtype.
struct GradArrays {
  ArrayView dO, dQ, dK, dV;
};

/// The Problem \p arrays and \p keywords describe; raises ValueError or
/// TypeError naming the array when their shapes, dtypes, devices or strides
/// do not fit together (the API checks the rest when planning).
api::Problem problemFor(const CallArrays &arrays, const CallKeywords &keywords);

/// The pointers of one run of a plan of problemFor(arrays, ...).
api::Tensors tensorsFor(const CallArrays &arrays, const CallKeywords &keywords);

/// The pointers of one backward of problemFor(arrays, ...); raises
/// ValueError or TypeError when a gradient does not match its partner.
api::BackwardTensors backwardTensorsFor(const CallArrays &arrays,
                                        const GradArrays &grads,
                                        const CallKeywords &keywords);

} // namespace fmhajit::python
