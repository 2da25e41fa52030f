//===- CudaForwardData.h - The device copies of one forward call's buffers ===//
//
// DeviceForwardData (DeviceForwardData.h) over the CUDA driver's memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/CudaResources.h"
#include "runtime/device/DeviceForwardData.h"

namespace fmhajit {

using CudaForwardData = DeviceForwardData<CudaDriver, DeviceBuffer>;

/// checkForwardFits against \p driver's GPU.
inline llvm::Error checkFitsOnGpu(const CudaDriver &driver, const KernelSpec &spec,
                                  const AttentionProblem &problem) {
  return checkForwardFits(spec, problem, driver.device().totalMemory, driver.device().name);
}

} // namespace fmhajit
