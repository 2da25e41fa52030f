//===- GpuBackwardStep.h - A backward plan's launches on a GPU ------------===//
//
// bwd_dot_do_o, bwd_dq_dk_dv and, where the key items add dQ atomically
// (bwdKeyItemsAddDq: deterministic=0), bwd_convert_dq, one after another on
// the caller's stream. The workspace holds D = rowsum(dO * O) and then the
// fp32 dQ accumulator, which bwd_dot_do_o zeroes (BackwardWorkspace). Every
// device pointer comes from the caller's BackwardTensors, as in
// GpuForwardStep: the plan holds no device memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "runtime/api/BackwardWorkspace.h"
#include "runtime/api/PlanState.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "llvm/ADT/ArrayRef.h"
#include <memory>
#include <optional>
#include <vector>

namespace fmhajit {

class GpuBackwardStep : public BackwardRunner {
public:
  /// \p params: each kernel's arguments but the caller's pointers;
  /// \p convert only when the grad kernel adds dQ atomically.
  GpuBackwardStep(GpuKernel dot, GpuKernel grad,
                  std::optional<GpuKernel> convert, const KernelArgs &params,
                  BackwardWorkspace workspace, void *stream)
      : dot(std::move(dot)), grad(std::move(grad)), convert(std::move(convert)),
        params(params), workspace(workspace), stream(stream) {}

  /// Launches on BackwardTensors::stream, else the problem's; asynchronous.
  llvm::Error run(const api::BackwardTensors &tensors) const override;

  /// Compiles and loads \p specs (bwd_dot_do_o, bwd_dq_dk_dv, then
  /// bwd_convert_dq where the grad kernel adds dQ atomically) on their GPU,
  /// and says how each was loaded in \p loads (one per spec).
  static llvm::Expected<std::unique_ptr<const GpuBackwardStep>>
  load(llvm::ArrayRef<KernelSpec> specs, const KernelArgs &params,
       BackwardWorkspace workspace, void *stream, KernelCache &cache,
       std::vector<api::StepLoad> &loads);

private:
  GpuKernel dot, grad;
  std::optional<GpuKernel> convert;
  KernelArgs params;
  BackwardWorkspace workspace;
  void *stream;
};

} // namespace fmhajit
