//===- HostBackwardStep.h - A backward plan's launches on the host --------===//
//
// bwd_dot_do_o then bwd_dq_dk_dv (ir/BackwardKernel.h) on the caller's
// buffers, each with its KernelArgs bound in advance but for the pointers:
// the forward's tensors through HostBinding (cu_seqlens and slopes default
// to the plan's copies), then dO, dQ, dK, dV at the strides of O, Q, K, V,
// and D (and, for head items, dQ's fp32 sums: BackwardWorkspace) in the
// caller's workspace or a per-thread buffer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/BackwardWorkspace.h"
#include "runtime/api/HostForwardStep.h"
#include "runtime/api/PlanState.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include <memory>

namespace fmhajit {

class HostBackwardStep : public BackwardRunner {
public:
  /// \p workspace: where D and dQ's sums go in the workspace.
  HostBackwardStep(HostKernel dot, HostBinding dotBinding, HostKernel grad,
                   HostBinding gradBinding, BackwardWorkspace workspace,
                   std::shared_ptr<HostExecutor> executor)
      : dot(std::move(dot)), grad(std::move(grad)),
        dotBinding(std::move(dotBinding)), gradBinding(std::move(gradBinding)),
        workspace(workspace), executor(std::move(executor)) {}

  llvm::Error run(const api::BackwardTensors &tensors) const override;

private:
  KernelArgs bind(const HostBinding &binding, const api::BackwardTensors &t,
                  void *space) const;

  HostKernel dot, grad;
  HostBinding dotBinding, gradBinding;
  BackwardWorkspace workspace;
  std::shared_ptr<HostExecutor> executor;
};

} // namespace fmhajit
