//===- CudaForwardStep.h - A plan's forward launch on a CUDA GPU ----------===//
#pragma once

#include "ir/KernelAbi.h"
#include "runtime/CudaKernel.h"
#include "runtime/PlanState.h"

namespace fmhajit {

/// A loaded CUDA forward kernel with its FwdParams filled in except for the
/// device pointers, which come from the caller's Tensors (cu_seqlens and
/// ALiBi slopes included: the plan holds no device memory).
class CudaForwardStep : public StepRunner {
public:
  /// \p kvAlignment: the bytes K and V must start on (16 for pipeline mma,
  /// whose cp.async copies K/V rows 16 bytes at a time).
  CudaForwardStep(CudaKernel kernel, const FwdParams &params, void *stream, unsigned kvAlignment)
      : kernel(std::move(kernel)), params(params), stream(stream), kvAlignment(kvAlignment) {}

  /// Launches on Tensors::stream, else the problem's stream; asynchronous.
  llvm::Error run(const api::Tensors &tensors) const override;

private:
  CudaKernel kernel;
  FwdParams params;
  void *stream;
  unsigned kvAlignment;
};

} // namespace fmhajit
