//===- CudaAppendStep.h - An append plan's launch on a CUDA GPU -----------===//
//
// One append_kv launch (PagedKv.h's makeAppendKvParams) on the caller's
// device buffers. The plan's rotary tables, when it rotates, are uploaded
// once at load and live as long as the plan. The lengths and block table
// are device memory the kernel reads, so unlike the host's append this
// one cannot check them before launching.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/AppendLowering.h"
#include "runtime/device/CudaKernel.h"
#include "runtime/device/CudaResources.h"
#include "runtime/api/PlanState.h"

namespace fmhajit {

class CudaAppendStep : public AppendRunner {
public:
  /// Loads \p spec's kernel and uploads the cos/sin tables of \p problem's
  /// rotary form (none without one).
  static llvm::Expected<std::unique_ptr<const CudaAppendStep>>
  load(const KernelSpec &spec, const LoweredAppend &problem, KernelCache &cache, void *stream);

  /// Launches on AppendTensors::stream, else the problem's; asynchronous.
  llvm::Error run(const api::AppendTensors &tensors) const override;

private:
  CudaAppendStep(CudaKernel kernel, AppendKvProblem problem, DeviceBuffer cos, DeviceBuffer sin,
                 void *stream)
      : kernel(std::move(kernel)), problem(std::move(problem)), cos(std::move(cos)),
        sin(std::move(sin)), stream(stream) {}

  CudaKernel kernel;
  AppendKvProblem problem;
  DeviceBuffer cos, sin; ///< the plan's rotary tables (empty without rotary)
  void *stream;
};

} // namespace fmhajit
