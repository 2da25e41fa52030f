//===- CudaForwardLaunch.cpp - A forward call's kernels on one stream -----===//
#include "runtime/CudaForwardLaunch.h"
#include "runtime/CudaResources.h"
#include "runtime/SplitKv.h"
#include "runtime/TimedLaunch.h"

using namespace fmhajit;

llvm::Error CudaForwardLaunch::launch(const KernelArgs &params, cuda::CUstream stream) const {
  if (llvm::Error err = kernel.launch(params, stream))
    return err;
  if (!combine)
    return llvm::Error::success();
  return combine->launch(makeCombineParams(combine->spec(), params), stream);
}

llvm::Expected<float> CudaForwardLaunch::launchTimed(const KernelArgs &params,
                                                     cuda::CUstream stream,
                                                     CudaTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
