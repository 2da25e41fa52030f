//===- GpuForwardLaunch.cpp - A forward call's kernels on one stream ------===//
#include "runtime/device/GpuForwardLaunch.h"
#include "runtime/device/GpuResources.h"
#include "runtime/device/SplitKv.h"

using namespace fmhajit;

llvm::Error GpuForwardLaunch::launch(const KernelArgs &params,
                                     GpuStreamHandle stream,
                                     const TensorMaps *maps) const {
  if (llvm::Error err = kernel.launch(params, stream, maps))
    return err;
  if (!combine)
    return llvm::Error::success();
  return combine->launch(makeCombineParams(combine->spec(), params), stream);
}

llvm::Expected<float> GpuForwardLaunch::launchTimed(const KernelArgs &params,
                                                    GpuStreamHandle stream,
                                                    GpuTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
