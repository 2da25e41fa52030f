//===- CudaForwardRunner.h - The CUDA backend of the e2e harness ----------===//
//
// A ForwardRunner (ForwardHarness.h) that runs kernels on the GPU: loads
// the kernel through a KernelCache on a fresh temporary directory, copies
// the case's host inputs to the device, poisons O and LSE there, launches,
// and copies O and LSE back. shared() is null where no GPU and driver are
// present, and the tests skip.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ForwardHarness.h"
#include "runtime/device/CudaDriver.h"
#include "runtime/device/GpuKernel.h"
#include "runtime/device/GpuResources.h"
#include <memory>
#include <optional>
#include <string>

namespace fmhajit::e2e {

/// A device copy of \p bytes at \p data for a test (\p what names it); a
/// failed upload is a test failure and gives an empty buffer.
GpuBuffer uploadOrFail(CudaDriver &driver, const void *data, size_t bytes,
                       const char *what);

class CudaForwardRunner {
public:
  static llvm::Expected<std::unique_ptr<CudaForwardRunner>> create();
  ~CudaForwardRunner();

  /// The process-wide runner, or null with unavailableReason() set.
  static CudaForwardRunner *shared();
  /// Why shared() is null ("no CUDA driver: ...").
  static const std::string &unavailableReason();

  CudaDriver &driver() { return cudaDriver; }
  llvm::Expected<GpuKernel> load(const KernelSpec &spec);
  llvm::Error operator()(const KernelSpec &spec,
                         const AttentionProblem &problem, ForwardData &data);

private:
  CudaForwardRunner(CudaDriver &driver, std::string dir,
                    std::unique_ptr<KernelCache> cache, GpuStream stream)
      : cudaDriver(driver), dir(std::move(dir)), kernelCache(std::move(cache)),
        stream(std::move(stream)) {}

  CudaDriver &cudaDriver;
  std::string dir;
  std::unique_ptr<KernelCache> kernelCache;
  GpuStream stream;
};

} // namespace fmhajit::e2e
