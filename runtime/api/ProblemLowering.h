//===- ProblemLowering.h - A public Problem in the library's terms --------===//
//
// plan() works on a LoweredProblem: the feature part of a KernelSpec (what
// any kernel for the problem must compute: family (fwd, or fwd_paged for a
// paged K/V cache), dtypes, head dims, mask, bias, softcap, LSE, varlen; no
// pipeline or tile yet), the run-time
// AttentionProblem the kernels and the reference share, and every tensor's
// element strides. lowerProblem() checks everything first and reports every
// problem at once, each naming the Problem field and what to change.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/variants/VariantTensorUse.h"
#include "fmhajit/Problem.h"
#include "runtime/api/TensorLayouts.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/KvCache.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct LoweredProblem {
  KernelSpec features;      ///< family fwd or fwd_paged, features, target
  AttentionProblem problem; ///< validated against features
  ForwardStrides strides;
  TensorShape qShape, kShape, vShape, oShape;
  api::TensorLayout qLayout, kLayout, vLayout, oLayout;
  /// rowAlignment of K and V, the smaller: pipelines that copy K/V rows in
  /// 16-byte pieces need 16.
  unsigned kvRowAlignment = 16;
  api::Device device = api::Device::Host;
  void *stream = nullptr;
  std::vector<int32_t> cuSeqlensQ, cuSeqlensK; ///< host copies, under varlen
  std::vector<float> alibiSlopes;              ///< resolved, under ALiBi
  std::vector<float> sinks; ///< under sink: Problem::sinks (may be empty)
  /// Paged K/V (family fwd_paged): the pools' layout (K/V shapes and
  /// strides are the pools') and each sequence's keys.
  std::optional<KvCacheLayout> pagedCache;
  std::vector<int32_t> seqlensK;
  /// The tensor slots the variant reads (Tensors::variantTensors).
  VariantTensorUse variantTensors;
};

/// Sinks that a launch made before run() may read (autotuning, whose time
/// does not depend on their values): \p l's, or zeros when the tensors
/// give them at run time; empty without sink.
inline std::vector<float> sinksForTiming(const LoweredProblem &l) {
  if (!l.features.sink || !l.sinks.empty())
    return l.sinks;
  return std::vector<float>(size_t(l.problem.headsQ), 0.0f);
}

/// Elements from the bias's first element to one past its last at
/// \p l's bias strides (a broadcast dim adds none); 0 without bias.
inline int64_t biasSpanElements(const LoweredProblem &l) {
  if (l.features.bias != Bias::Elementwise)
    return 0;
  const AttentionProblem &a = l.problem;
  const TensorStrides &s = l.strides.bias;
  return 1 + (a.batch - 1) * s.batch + (a.headsQ - 1) * s.head +
         (a.seqlenQ - 1) * s.row + (a.seqlenK - 1) * l.strides.biasKey;
}

DType toDType(api::DType type);
Mask toMask(api::Mask mask);
/// "host", "cuda" or "hip".
const char *deviceName(api::Device device);

/// Head dims (\p headDimV 0: none given) and the dtype in the public
/// structs' words, before validateSpec would report them in a spec's.
void checkTypesAndDims(int64_t headDim, int64_t headDimV, api::DType dtype,
                       const ArchInfo &arch, ErrorList &errors);

/// Checks \p problem for \p target (a known target of the problem's
/// device) and lowers it.
llvm::Expected<LoweredProblem> lowerProblem(const api::Problem &problem,
                                            const std::string &target);

} // namespace fmhajit
