//===- HostBackwardStep.h - A backward plan's launches on the host --------===//
//
// bwd_dot_do_o then bwd_dq_dk_dv (ir/BackwardKernel.h) on the caller's
// buffers, each with its KernelArgs bound in advance but for the pointers:
// the forward's tensors through HostBinding (cu_seqlens and slopes default
// to the plan's copies), then dO, dQ, dK, dV at the strides of O, Q, K, V,
// and D in the caller's workspace or a per-thread buffer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/HostForwardStep.h"
#include "runtime/api/PlanState.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include <memory>

namespace fmhajit {

class HostBackwardStep : public BackwardRunner {
public:
  /// \p dsumFloats: the floats of D (the LSE's shape).
  HostBackwardStep(HostKernel dot, HostBinding dotBinding, HostKernel grad,
                   HostBinding gradBinding, int64_t dsumFloats,
                   std::shared_ptr<HostExecutor> executor)
      : dot(std::move(dot)), grad(std::move(grad)),
        dotBinding(std::move(dotBinding)), gradBinding(std::move(gradBinding)),
        dsumFloats(dsumFloats), executor(std::move(executor)) {}

  llvm::Error run(const api::BackwardTensors &tensors) const override;

private:
  KernelArgs bind(const HostBinding &binding, const api::BackwardTensors &t,
                  float *dsum) const;

  HostKernel dot, grad;
  HostBinding dotBinding, gradBinding;
  int64_t dsumFloats;
  std::shared_ptr<HostExecutor> executor;
};

} // namespace fmhajit
