//===- Autotune.h - Timing the candidates of a problem on this machine ----===//
//
// Options::autotune times every kernel that passed the dispatcher's feature
// rule on scratch tensors with the problem's sizes and layouts (zeros: the
// time of attention does not depend on the values), one warm-up call then
// the median of a few, and returns them fastest first. Host kernels run on
// the plan's executor; GPU kernels (CUDA, HIP) are timed with events on a
// fresh stream.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/api/TuningStore.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace fmhajit {

/// Timed calls per candidate: at least kMinRuns, then more while the
/// candidate's total stays under kBudgetMs, at most kMaxRuns.
struct TuningPolicy {
  static constexpr unsigned kMinRuns = 3, kMaxRuns = 10;
  static constexpr double kBudgetMs = 100;
};

/// Times \p candidates on \p problem, fastest first.
llvm::Expected<std::vector<TunedTiming>>
timeCandidates(const std::vector<KernelSpec> &candidates,
               const LoweredProblem &problem, KernelCache &cache,
               unsigned threads);

/// The GPU half of timeCandidates (AutotuneGpu.cpp).
llvm::Expected<std::vector<TunedTiming>>
timeGpuCandidates(const std::vector<KernelSpec> &candidates,
                  const LoweredProblem &problem, KernelCache &cache);

/// The variant tensors a timed launch reads: every slot one element,
/// \p zero (a 0.0f where the kernel can read it). plan() has no tensors of
/// the run, and a variant that reads some does the same loads on these
/// (timing does not depend on the values).
inline VariantTensors timingVariantTensors(const float *zero) {
  VariantTensors table{};
  for (VariantTensor &slot : table.slot)
    slot = {zero, 1};
  return table;
}

/// The median of \p times (which must not be empty).
double medianOf(std::vector<double> times);

} // namespace fmhajit
