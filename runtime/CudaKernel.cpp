//===- CudaKernel.cpp - A compiled, loaded CUDA forward kernel ------------===//
#include "runtime/CudaKernel.h"
#include "runtime/LoadedModules.h"
#include "runtime/TimedLaunch.h"
#include "compiler/KernelCompiler.h"
#include "runtime/CudaModule.h"
#include "runtime/CudaResources.h"
#include "runtime/HostKernel.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "specs/Validate.h"
#include "llvm/ADT/StringMap.h"
#include <chrono>
#include <limits>
#include <mutex>

using namespace fmhajit;
using namespace fmhajit::cuda;
using Clock = std::chrono::steady_clock;

/// Dynamic shared memory a kernel may use without opting in.
static constexpr unsigned kDefaultSharedLimit = 48 * 1024;

static double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

static std::string ptxIsa(unsigned version) {
  return std::to_string(version / 10) + "." + std::to_string(version % 10);
}

// The target must be one this GPU and driver can run, else the driver
// would fail later with a less helpful CUDA_ERROR_NO_BINARY_FOR_GPU.
static llvm::Error checkRunnable(const ArchInfo &arch, const CudaDriver &driver) {
  const CudaDeviceInfo &device = driver.device();
  std::string suggestion =
      device.target ? "; use target=" + *device.target + " for this GPU" : std::string();
  if (arch.backend != Backend::Nvptx)
    return makeError(ErrorKind::Usage, "target " + arch.name +
                                           " does not run on a CUDA GPU" + suggestion +
                                           " (or --device host)");
  if (!targetRunsOn(arch.name, device.cc)) {
    std::optional<TargetCapability> need = capabilityOfTarget(arch.name);
    std::string rule = need && need->exact ? "exactly " + need->cc.str()
                                           : need ? need->cc.str() + " or newer" : "?";
    return makeError(ErrorKind::Unsupported,
                     "target " + arch.name + " needs a GPU of compute capability " + rule +
                         ", but " + device.name + " is " + device.cc.str() + suggestion);
  }
  unsigned ptx = driver.ptxVersion();
  if (ptx && ptx < arch.minPtx)
    return makeError(ErrorKind::Driver,
                     "target " + arch.name + " needs PTX ISA " + ptxIsa(arch.minPtx) +
                         ", but CUDA driver " + driverVersionString(driver.driverVersion()) +
                         " accepts at most " + ptxIsa(ptx) + "; update the NVIDIA driver");
  return llvm::Error::success();
}

// The kernel's one parameter must be KernelArgs as this build lays it out;
// a mismatch (an ABI change on one side) would read garbage pointers.
static llvm::Error checkParamSize(llvm::StringRef ptx, llvm::StringRef name) {
  std::string marker = (name + "_param_0[").str();
  size_t at = ptx.find(marker);
  unsigned bytes = 0;
  if (at == llvm::StringRef::npos ||
      ptx.substr(at + marker.size()).take_until([](char c) { return c == ']'; })
          .getAsInteger(10, bytes))
    return makeError(ErrorKind::Jit, "the PTX of " + name + " has no KernelArgs parameter");
  if (bytes != sizeof(KernelArgs))
    return makeError(ErrorKind::Jit, "the PTX of " + name + " takes a " + llvm::Twine(bytes) +
                                         "-byte parameter, but KernelArgs has " +
                                         llvm::Twine(sizeof(KernelArgs)) +
                                         " bytes: rebuild the kernel (fmhajit cache clear)");
  return llvm::Error::success();
}

using ModuleRegistry = LoadedModules<CudaModule>;

/// Compiles (or finds) the PTX of \p spec and loads it, unless this process
/// has loaded it already; fills the timing fields of \p stats.
static llvm::Expected<std::shared_ptr<const CudaModule>>
loadModule(const KernelSpec &spec, KernelCache &cache, CudaDriver &driver,
           CudaLoadStats &stats) {
  std::string name = encodeName(spec);
  Clock::time_point start = Clock::now();
  auto artifact = compileKernel(spec, cache, CompileOptions{driver.ptxVersion()});
  if (!artifact)
    return artifact.takeError();
  stats.codegenMs = msSince(start);
  stats.origin = (*artifact)->origin;
  if (auto module = ModuleRegistry::get().find(name)) {
    stats.moduleReused = true;
    return module;
  }
  if (llvm::Error err = checkParamSize((*artifact)->bytes(), name))
    return std::move(err);
  auto module = CudaModule::load(driver, (*artifact)->bytes());
  if (!module)
    return module.takeError();
  stats.driverMs = (*module)->loadMs();
  return ModuleRegistry::get().insert(name, std::move(*module));
}

llvm::Expected<CudaKernel> CudaKernel::load(const KernelSpec &spec, KernelCache &cache) {
  auto driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  if (llvm::Error err = checkRunnable(*findArch(spec.target), *driver))
    return std::move(err);
  CudaLoadStats stats;
  auto module = loadModule(spec, cache, *driver, stats);
  if (!module)
    return module.takeError();
  auto fn = (*module)->function(encodeName(spec));
  if (!fn)
    return fn.takeError();
  CudaKernel kernel(spec, std::move(*module), *fn);
  kernel.driver = &*driver;
  kernel.stats = stats;
  if (llvm::Error err = kernel.configure(driver->device()))
    return std::move(err);
  return std::move(kernel);
}

// Reads the kernel's resources, checks the block fits them and opts in to
// the dynamic shared memory the tile needs.
llvm::Error CudaKernel::configure(const CudaDeviceInfo &device) {
  struct Query { int *field; CUfunctionAttribute attribute; };
  for (Query q : {Query{&res.registers, kFuncNumRegs}, Query{&res.localBytes, kFuncLocalSizeBytes},
                  Query{&res.staticSharedBytes, kFuncSharedSizeBytes},
                  Query{&res.maxThreadsPerBlock, kFuncMaxThreadsPerBlock}})
    if (llvm::Error err = driver->check(driver->api().funcGetAttribute(q.field, q.attribute, fn),
                                        "cuFuncGetAttribute"))
      return err;
  threads = kernelSpec.warps * 32;
  smem = tileFootprintBytes(kernelSpec, *findArch(kernelSpec.target));
  std::string name = encodeName(kernelSpec);
  if (int(threads) > res.maxThreadsPerBlock)
    return makeError(ErrorKind::Unsupported,
                     name + " needs " + llvm::Twine(threads) + " threads per block, but with " +
                         llvm::Twine(res.registers) + " registers per thread the GPU allows " +
                         llvm::Twine(res.maxThreadsPerBlock) + "; use fewer warps");
  unsigned total = smem + unsigned(res.staticSharedBytes);
  if (total > unsigned(device.maxSharedPerBlockOptin))
    return makeError(ErrorKind::Unsupported,
                     name + " needs " + llvm::Twine(total) + " bytes of shared memory, but " +
                         device.name + " allows " + llvm::Twine(device.maxSharedPerBlockOptin) +
                         " per block; use smaller bm, bn or stages");
  if (smem <= kDefaultSharedLimit)
    return llvm::Error::success();
  return driver->check(
      driver->api().funcSetAttribute(fn, kFuncMaxDynamicSharedSizeBytes, int(smem)),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

const std::string &CudaKernel::jitLog() const { return module->infoLog(); }

llvm::Error CudaKernel::launch(const KernelArgs &params, CUstream stream) const {
  int64_t blocks = workItems(kernelSpec, params); // the family decides
  if (blocks < 1 || blocks > std::numeric_limits<int32_t>::max())
    return makeError(ErrorKind::Usage, "the problem needs " + llvm::Twine(blocks) +
                                           " thread blocks; the GPU launches 1 to 2^31-1");
  // The driver copies sizeof(KernelArgs) bytes from this pointer at launch.
  KernelArgs copy = params;
  void *args[] = {&copy};
  return driver->check(driver->api().launchKernel(fn, unsigned(blocks), 1, 1, threads, 1, 1,
                                                  smem, stream, args, nullptr),
                       "cuLaunchKernel");
}

llvm::Expected<float> CudaKernel::launchTimed(const KernelArgs &params, CUstream stream) const {
  auto timer = CudaTimer::create(*driver);
  if (!timer)
    return timer.takeError();
  return launchTimed(params, stream, *timer);
}

llvm::Expected<float> CudaKernel::launchTimed(const KernelArgs &params, CUstream stream,
                                              CudaTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
