//===- GpuBackwardCase.h - One GPU backward call on seeded inputs, checked ===//
//
// BackwardCase's GPU twin, driven through the public API as any program
// would: seeded random Q, K, V and dO uploaded, the forward planned and run
// on the GPU for O and LSE (api::plan with wantLse), then api::planBackward
// pinned to the spec's bwd_dq_dk_dv and api::backward on gradients
// poisoned with NaN; dQ, dK and dV come back and the float64 reference
// judges them (BackwardCheck). Packed layouts (BSHD, or THD under varlen),
// the default stream.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "runtime/device/DeviceCopies.h"
#include "runtime/harness/BackwardCase.h"
#include <memory>

namespace fmhajit::harness {

class GpuBackwardCase {
public:
  /// For \p spec (resolved, family bwd_dq_dk_dv, an NVPTX target), the
  /// public problem \p problem (device and features as the spec's) and
  /// \p a, the same problem as the reference reads it.
  static llvm::Expected<std::unique_ptr<GpuBackwardCase>>
  make(const KernelSpec &spec, const api::Problem &problem,
       const AttentionProblem &a, uint64_t seed);

  /// Poisons dQ, dK, dV, runs the backward once and downloads the gradients.
  llvm::Error run();
  /// The backward again on the same buffers (timing); asynchronous.
  llvm::Error launch();
  /// The float64 reference's verdict on the last run().
  BackwardCheck check() const;

  const api::Plan &plan() const { return backwardPlan; }
  /// The last run's gradients, packed.
  const HostTensor &dq() const { return dQ; }
  const HostTensor &dk() const { return dK; }
  const HostTensor &dv() const { return dV; }

private:
  GpuBackwardCase(const KernelSpec &spec, const AttentionProblem &a);
  llvm::Error upload(const api::Problem &problem);
  llvm::Error runForward(const api::Problem &problem);

  KernelSpec spec;
  AttentionProblem p;
  HostTensor q, k, v, dO, dQ, dK, dV;
  DeviceCopies device;
  api::Plan backwardPlan;
  api::BackwardTensors tensors;
};

} // namespace fmhajit::harness
