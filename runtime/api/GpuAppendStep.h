//===- GpuAppendStep.h - An append plan's launch on a GPU -----------------===//
//
// One append_kv launch (PagedKv.h's makeAppendKvParams) on the caller's
// device buffers. The plan's rotary tables, when it rotates, are uploaded
// once at load and live as long as the plan. The lengths and block table
// are device memory the kernel reads, so unlike the host's append this
// one cannot check them before launching. CUDA and HIP alike.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/AppendLowering.h"
#include "runtime/api/PlanState.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/GpuResources.h"

namespace fmhajit {

class GpuAppendStep : public AppendRunner {
public:
  /// Loads \p spec's kernel on \p driver's GPU and uploads the cos/sin
  /// tables of \p problem's rotary form (none without one).
  static llvm::Expected<std::unique_ptr<const GpuAppendStep>>
  load(GpuDriver &driver, const KernelSpec &spec, const LoweredAppend &problem,
       KernelCache &cache, void *stream);

  /// Launches on AppendTensors::stream, else the problem's; asynchronous.
  llvm::Error run(const api::AppendTensors &tensors) const override;

private:
  GpuAppendStep(GpuKernel kernel, AppendKvProblem problem, GpuBuffer cos,
                GpuBuffer sin, void *stream)
      : kernel(std::move(kernel)), problem(std::move(problem)),
        cos(std::move(cos)), sin(std::move(sin)), stream(stream) {}

  GpuKernel kernel;
  AppendKvProblem problem;
  GpuBuffer cos, sin; ///< the plan's rotary tables (empty without rotary)
  void *stream;
};

} // namespace fmhajit
