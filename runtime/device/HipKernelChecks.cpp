//===- HipKernelChecks.cpp - What loading a kernel checks on AMDGPU -------===//
//
// HipRuntime's kernel hooks (GpuDriver.h). Before loading, the code
// object's metadata (AmdgpuCodeObject.h) is checked against this build:
// its kernarg segment must be exactly one KernelArgs.
//
// Launch geometry (ir/KernelAbi.h): blockDim.x = warps * wave size (64 on
// CDNA, 32 on RDNA); no dynamic LDS (the code object reserves its static
// LDS).
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "runtime/device/HipRuntime.h"
#include "runtime/device/KernelAbiCheck.h"
#include "specs/Errors.h"

using namespace fmhajit;

llvm::Expected<CodeObjectKernel>
fmhajit::checkKernelAbi(llvm::StringRef codeObject, llvm::StringRef name) {
  auto kernels = readCodeObjectKernels(codeObject);
  if (!kernels)
    return kernels.takeError();
  for (CodeObjectKernel &k : *kernels) {
    if (k.name != name)
      continue;
    if (k.kernargSegmentSize != sizeof(KernelArgs) || k.args.size() != 1 ||
        k.args[0].offset != 0 || k.args[0].size != sizeof(KernelArgs))
      return makeError(
          ErrorKind::Jit,
          "the code object of " + name + " declares a " +
              llvm::Twine(k.kernargSegmentSize) +
              "-byte kernarg segment, but this build passes one " +
              llvm::Twine(sizeof(KernelArgs)) +
              "-byte KernelArgs: rebuild the kernel (fmhajit cache clear)");
    return std::move(k);
  }
  return makeError(ErrorKind::Jit,
                   "the code object declares no kernel named " + name);
}

llvm::Error HipRuntime::checkTarget(const ArchInfo &arch) const {
  if (arch.backend == Backend::Amdgpu)
    return llvm::Error::success();
  return makeError(ErrorKind::Usage,
                   "target " + arch.name +
                       " does not run on an AMD GPU; use target=gfx90a, "
                       "gfx942, gfx950, gfx1100 or gfx1201 (or --device host)");
}

llvm::Error HipRuntime::checkArtifact(llvm::StringRef codeObject,
                                      llvm::StringRef name,
                                      GpuKernelResources &resources) const {
  auto metadata = checkKernelAbi(codeObject, name);
  if (!metadata)
    return metadata.takeError();
  resources.registers = int(metadata->vgprCount);
  resources.localBytes = int(metadata->privateSegmentFixedSize);
  resources.staticSharedBytes = int(metadata->groupSegmentFixedSize);
  resources.maxThreadsPerBlock = int(metadata->maxFlatWorkgroupSize);
  resources.codeObject = std::move(*metadata);
  return llvm::Error::success();
}

llvm::Expected<GpuLaunchShape>
HipRuntime::configureKernel(GpuFunctionHandle, const KernelSpec &spec,
                            GpuKernelResources &) {
  return GpuLaunchShape{spec.warps * findArch(spec.target)->waveSize, 0};
}
