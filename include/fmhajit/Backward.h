//===- fmhajit/Backward.h - The memory of one backward call ---------------===//
//
// The backward pass takes the Problem its forward ran (shapes, layouts,
// mask, softcap, ALiBi, varlen) and the forward's outputs, and writes the
// gradients of a loss L given dO = dL/dO:
//
//   dQ like Q, dK like K, dV like V (the Problem's shapes and layouts),
//   dO like O; all four in O's dtype (Problem::outDtype)
//   LSE as the forward wrote it with Problem::wantLse
//
// dK and dV sum over the query heads of each K/V head's group (GQA, MQA).
// The gradients are written, not accumulated. On the host they are the
// same bit for bit from run to run and for any thread count; on a GPU
// (Device::Cuda, pipeline mma) dQ is summed by fp32 atomic adds unless
// Options::deterministic is set, so it may differ in its last bits from run
// to run. See Fmhajit.h and docs/api.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Problem.h"
#include <cstdint>

namespace fmhajit::api {

/// The memory of one backward call (host pointers on Device::Host, device
/// pointers on a GPU).
struct BackwardTensors {
  /// The forward's inputs and output, as it ran.
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  const float *lse = nullptr; ///< the forward's LSE (required)
  const void *dO = nullptr;   ///< dL/dO, laid out like O
  void *dQ = nullptr, *dK = nullptr, *dV = nullptr; ///< written
  /// Varlen: null takes the plan's copies of the problem's cu_seqlens.
  const int32_t *cuSeqlensQ = nullptr, *cuSeqlensK = nullptr;
  /// ALiBi: null takes the problem's (or ALiBi's default) slopes.
  const float *alibiSlopes = nullptr;
  /// Plan::workspaceBytes() bytes (D = rowsum(dO * O) per query row, and on
  /// a GPU without Options::deterministic the fp32 dQ sums); on the host,
  /// null takes a per-thread buffer fmhajit keeps. GPU: required.
  void *workspace = nullptr;
  /// GPU: the CUstream to launch on; null takes the problem's stream.
  void *stream = nullptr;
  /// Problem::dropout: the forward's p, seed and offset, which regenerate
  /// its keep-mask.
  Dropout dropout;
};

} // namespace fmhajit::api
