//===- CudaKernel.h - A compiled, loaded CUDA forward kernel --------------===//
//
// CudaKernel::load takes a resolved spec for an NVPTX target to a function
// the GPU can launch, in two timed steps (together: the JIT compile time):
//
//   codegen   spec -> PTX text, through the KernelCache (compileKernel with
//             the driver's PTX ISA, which is part of the cache key)
//   driver    PTX -> SASS in cuModuleLoadDataEx (CudaModule)
//
// Loaded modules stay loaded for the life of the process, one per kernel
// name, so a second load of the same spec costs neither step.
//
// Launch geometry (ir/KernelAbi.h): one parameter, KernelArgs by value;
// gridDim.x = workItems(spec, params) (ir/KernelAbi.h); blockDim.x =
// warps * 32; dynamic shared memory = tileFootprintBytes(spec, arch), with
// the kernel's opt-in limit raised when that exceeds 48 KiB.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "ir/KernelAbi.h"
#include "runtime/CudaDriver.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

class CudaModule;
class CudaTimer;

/// What loading a kernel cost and where its code came from.
struct CudaLoadStats {
  ArtifactOrigin origin = ArtifactOrigin::Compiled; ///< of the PTX
  double codegenMs = 0; ///< spec -> PTX, or the cache lookup on a hit
  double driverMs = 0;  ///< PTX -> SASS; 0 when the module was loaded
  bool moduleReused = false; ///< this process had loaded it already
};

/// The resources the GPU reports for a loaded kernel.
struct CudaKernelResources {
  int registers = 0;  ///< per thread
  int localBytes = 0; ///< per thread: spills and stack (0 is good)
  int staticSharedBytes = 0;
  int maxThreadsPerBlock = 0;
};

class CudaKernel {
public:
  /// Compiles (through \p cache) and loads the kernel of a resolved spec
  /// for an NVPTX target; refuses targets this GPU cannot run and tiles
  /// whose shared memory exceeds what it allows.
  static llvm::Expected<CudaKernel> load(const KernelSpec &spec, KernelCache &cache);

  const KernelSpec &spec() const { return kernelSpec; }
  const CudaLoadStats &loadStats() const { return stats; }
  const CudaKernelResources &resources() const { return res; }
  /// Bytes of dynamic shared memory each block gets.
  unsigned sharedBytes() const { return smem; }
  unsigned blockThreads() const { return threads; }
  /// The driver's JIT info log of the module (registers, spills).
  const std::string &jitLog() const;

  /// Launches on \p stream (asynchronous: synchronize the stream to see
  /// failures inside the kernel). \p params holds device pointers.
  llvm::Error launch(const KernelArgs &params, cuda::CUstream stream) const;
  /// Launches between two events and waits: the kernel's milliseconds.
  llvm::Expected<float> launchTimed(const KernelArgs &params, cuda::CUstream stream) const;
  /// The same with the events of \p timer, for loops that time many
  /// launches.
  llvm::Expected<float> launchTimed(const KernelArgs &params, cuda::CUstream stream,
                                    CudaTimer &timer) const;

private:
  CudaKernel(KernelSpec spec, std::shared_ptr<const CudaModule> module,
             cuda::CUfunction fn)
      : kernelSpec(std::move(spec)), module(std::move(module)), fn(fn) {}
  llvm::Error configure(const CudaDeviceInfo &device);

  KernelSpec kernelSpec;
  std::shared_ptr<const CudaModule> module;
  cuda::CUfunction fn;
  CudaDriver *driver = nullptr;
  CudaLoadStats stats;
  CudaKernelResources res;
  unsigned smem = 0, threads = 0;
};

} // namespace fmhajit
