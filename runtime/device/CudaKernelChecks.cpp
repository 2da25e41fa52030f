//===- CudaKernelChecks.cpp - What loading a kernel checks on NVPTX -------===//
//
// CudaDriver's kernel hooks (GpuDriver.h): the target must run on this GPU
// and driver (compute capability, PTX ISA), the PTX's one parameter must
// be this build's KernelArgs, and the block must fit the function's
// registers and the GPU's shared memory, opted in above 48 KiB.
//
// Launch geometry (ir/KernelAbi.h): blockDim.x = warps * 32; dynamic
// shared memory = tileFootprintBytes(spec, arch).
//
//===----------------------------------------------------------------------===//
#include "ir/KernelAbi.h"
#include "runtime/device/CudaDriver.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Validate.h"

using namespace fmhajit;
using namespace fmhajit::cuda;

/// Dynamic shared memory a kernel may use without opting in.
static constexpr unsigned kDefaultSharedLimit = 48 * 1024;

static std::string ptxIsa(unsigned version) {
  return std::to_string(version / 10) + "." + std::to_string(version % 10);
}

// The target must be one this GPU and driver can run, else the driver
// would fail later with a less helpful CUDA_ERROR_NO_BINARY_FOR_GPU.
llvm::Error CudaDriver::checkTarget(const ArchInfo &arch) const {
  std::string suggestion =
      info.target ? "; use target=" + *info.target + " for this GPU"
                  : std::string();
  if (arch.backend != Backend::Nvptx)
    return makeError(ErrorKind::Usage, "target " + arch.name +
                                           " does not run on a CUDA GPU" +
                                           suggestion + " (or --device host)");
  if (!targetRunsOn(arch.name, info.cc)) {
    std::optional<TargetCapability> need = capabilityOfTarget(arch.name);
    std::string rule = need && need->exact ? "exactly " + need->cc.str()
                       : need              ? need->cc.str() + " or newer"
                                           : "?";
    return makeError(
        ErrorKind::Unsupported,
        "target " + arch.name + " needs a GPU of compute capability " + rule +
            ", but " + info.name + " is " + info.cc.str() + suggestion);
  }
  unsigned ptx = ptxVersion();
  if (ptx && ptx < arch.minPtx)
    return makeError(ErrorKind::Driver,
                     "target " + arch.name + " needs PTX ISA " +
                         ptxIsa(arch.minPtx) + ", but CUDA driver " +
                         driverVersionString(version) + " accepts at most " +
                         ptxIsa(ptx) + "; update the NVIDIA driver");
  return llvm::Error::success();
}

// The kernel's one parameter must be KernelArgs as this build lays it out;
// a mismatch (an ABI change on one side) would read garbage pointers.
llvm::Error CudaDriver::checkArtifact(llvm::StringRef ptx, llvm::StringRef name,
                                      GpuKernelResources &) const {
  std::string marker = (name + "_param_0[").str();
  size_t at = ptx.find(marker);
  unsigned bytes = 0;
  if (at == llvm::StringRef::npos ||
      ptx.substr(at + marker.size())
          .take_until([](char c) { return c == ']'; })
          .getAsInteger(10, bytes))
    return makeError(ErrorKind::Jit,
                     "the PTX of " + name + " has no KernelArgs parameter");
  if (bytes != sizeof(KernelArgs))
    return makeError(ErrorKind::Jit,
                     "the PTX of " + name + " takes a " + llvm::Twine(bytes) +
                         "-byte parameter, but KernelArgs has " +
                         llvm::Twine(sizeof(KernelArgs)) +
                         " bytes: rebuild the kernel (fmhajit cache clear)");
  return llvm::Error::success();
}

// Reads the kernel's resources, checks the block fits them and opts in to
// the dynamic shared memory the tile needs.
llvm::Expected<GpuLaunchShape>
CudaDriver::configureKernel(GpuFunctionHandle handle, const KernelSpec &spec,
                            GpuKernelResources &res) {
  auto fn = static_cast<CUfunction>(handle);
  struct Query {
    int *field;
    CUfunctionAttribute attribute;
  };
  for (Query q : {Query{&res.registers, kFuncNumRegs},
                  Query{&res.localBytes, kFuncLocalSizeBytes},
                  Query{&res.staticSharedBytes, kFuncSharedSizeBytes},
                  Query{&res.maxThreadsPerBlock, kFuncMaxThreadsPerBlock}})
    if (llvm::Error err = check(fns.funcGetAttribute(q.field, q.attribute, fn),
                                "cuFuncGetAttribute"))
      return std::move(err);
  const ArchInfo &arch = *findArch(spec.target);
  // Split-KV's kernels, and v_pretranspose kernels behind their pass, wait
  // for the kernel before them in place (griddepcontrol.wait,
  // ir/targets/NvptxTarget.cpp), so they may launch before that one ends.
  GpuLaunchShape shape{blockWarps(spec) * 32, tileFootprintBytes(spec, arch),
                       waitsForKernelBefore(spec) && arch.gridDependency};
  std::string name = encodeName(spec);
  if (int(shape.blockThreads) > res.maxThreadsPerBlock)
    return makeError(
        ErrorKind::Unsupported,
        name + " needs " + llvm::Twine(shape.blockThreads) +
            " threads per block, but with " + llvm::Twine(res.registers) +
            " registers per thread the GPU allows " +
            llvm::Twine(res.maxThreadsPerBlock) + "; use fewer warps");
  unsigned total = shape.sharedBytes + unsigned(res.staticSharedBytes);
  if (total > unsigned(info.maxSharedPerBlockOptin))
    return makeError(ErrorKind::Unsupported,
                     name + " needs " + llvm::Twine(total) +
                         " bytes of shared memory, but " + info.name +
                         " allows " + llvm::Twine(info.maxSharedPerBlockOptin) +
                         " per block; use smaller bm, bn or stages");
  if (shape.sharedBytes > kDefaultSharedLimit)
    if (llvm::Error err =
            check(fns.funcSetAttribute(fn, kFuncMaxDynamicSharedSizeBytes,
                                       int(shape.sharedBytes)),
                  "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))
      return std::move(err);
  return shape;
}
