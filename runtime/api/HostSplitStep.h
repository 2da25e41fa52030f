//===- HostSplitStep.h - A plan's split-KV launches on the host -----------===//
#pragma once

#include "runtime/api/HostForwardStep.h"
#include "runtime/device/SplitKv.h"

namespace fmhajit {

/// A buffer of at least \p bytes for this thread, kept between calls: the
/// workspace of host runs whose caller passes none. Per thread, not per
/// plan: plans may run on several threads at once, a thread one at a time.
uint8_t *hostWorkspace(int64_t bytes);

/// fwd_splitkv then splitkv_combine (SplitKv.h) as one runner: the two
/// launches of a split plan share the partials in the workspace. On the
/// host a null Tensors::workspace takes a per-thread buffer kept between
/// calls, so host callers need not allocate one.
class HostSplitStep : public StepRunner {
public:
  HostSplitStep(HostSplitKv kernels, HostBinding binding,
                SplitWorkspaceLayout workspace,
                std::shared_ptr<HostExecutor> executor)
      : kernels(std::move(kernels)), binding(std::move(binding)),
        workspace(workspace), executor(std::move(executor)) {}

  llvm::Error run(const api::Tensors &tensors) const override;

private:
  HostSplitKv kernels;
  HostBinding binding; ///< numSplits set; the partials' pointers not yet
  SplitWorkspaceLayout workspace;
  std::shared_ptr<HostExecutor> executor;
};

} // namespace fmhajit
