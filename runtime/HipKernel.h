//===- HipKernel.h - A compiled, loaded HIP forward kernel ----------------===//
//
// HipKernel::load takes a resolved spec for an AMDGPU target to a function
// the GPU can launch, in two timed steps:
//
//   codegen   spec -> code object (.hsaco), through the KernelCache
//   loader    hipModuleLoadData + hipModuleGetFunction
//
// Before loading, the code object's metadata (AmdgpuCodeObject.h) is
// checked against this build: its kernarg segment must be exactly one
// KernelArgs. Loaded modules stay loaded for the life of the process, one
// per kernel name.
//
// Launch geometry (ir/KernelAbi.h): the kernarg segment is the KernelArgs
// bytes (HIP_LAUNCH_PARAM_BUFFER_POINTER); gridDim.x = workItems(spec, params);
// blockDim.x = warps * wave size (64 on CDNA, 32 on RDNA); no dynamic LDS
// (the code object reserves its static LDS).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/AmdgpuCodeObject.h"
#include "compiler/KernelCache.h"
#include "ir/KernelAbi.h"
#include "runtime/HipResources.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

class HipModule;

/// What loading a kernel cost and where its code came from.
struct HipLoadStats {
  ArtifactOrigin origin = ArtifactOrigin::Compiled; ///< of the code object
  double codegenMs = 0; ///< spec -> .hsaco, or the cache lookup on a hit
  double loaderMs = 0;  ///< hipModuleLoadData; 0 when the module was loaded
  bool moduleReused = false; ///< this process had loaded it already
};

/// Checks that \p codeObject declares kernel \p name with one kernarg
/// segment of exactly sizeof(KernelArgs) bytes, and returns its metadata.
llvm::Expected<CodeObjectKernel> checkKernelAbi(llvm::StringRef codeObject, llvm::StringRef name);

class HipKernel {
public:
  /// Compiles (through \p cache) and loads the kernel of a resolved spec
  /// for an AMDGPU target.
  static llvm::Expected<HipKernel> load(const KernelSpec &spec, KernelCache &cache);

  const KernelSpec &spec() const { return kernelSpec; }
  const HipLoadStats &loadStats() const { return stats; }
  /// The code object's own account: registers, LDS, scratch, wave size.
  const CodeObjectKernel &resources() const { return metadata; }
  unsigned blockThreads() const { return threads; }

  /// Launches on \p stream (asynchronous: synchronize the stream to see
  /// failures inside the kernel). \p params holds device pointers.
  llvm::Error launch(const KernelArgs &params, hip::hipStream_t stream) const;
  /// Launches between \p timer's events and waits: the kernel's ms.
  llvm::Expected<float> launchTimed(const KernelArgs &params, hip::hipStream_t stream,
                                    HipTimer &timer) const;

private:
  HipKernel(KernelSpec spec, std::shared_ptr<const HipModule> module, hip::hipFunction_t fn)
      : kernelSpec(std::move(spec)), module(std::move(module)), fn(fn) {}

  KernelSpec kernelSpec;
  std::shared_ptr<const HipModule> module;
  hip::hipFunction_t fn;
  HipRuntime *hip = nullptr;
  HipLoadStats stats;
  CodeObjectKernel metadata;
  unsigned threads = 0;
};

} // namespace fmhajit
