//===- CudaForwardLaunch.cpp - A forward call's kernels on one stream -----===//
#include "runtime/device/CudaForwardLaunch.h"
#include "runtime/device/CudaResources.h"
#include "runtime/device/SplitKv.h"
#include "runtime/device/TimedLaunch.h"

using namespace fmhajit;

llvm::Error CudaForwardLaunch::launch(const FwdParams &params, cuda::CUstream stream) const {
  if (llvm::Error err = kernel.launch(params, stream))
    return err;
  if (!combine)
    return llvm::Error::success();
  return combine->launch(makeCombineParams(combine->spec(), params), stream);
}

llvm::Expected<float> CudaForwardLaunch::launchTimed(const FwdParams &params,
                                                     cuda::CUstream stream,
                                                     CudaTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
