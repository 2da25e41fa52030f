//===- HipKernel.cpp - A compiled, loaded HIP forward kernel --------------===//
#include "runtime/HipKernel.h"
#include "runtime/LoadedModules.h"
#include "runtime/TimedLaunch.h"
#include "compiler/KernelCompiler.h"
#include "runtime/HostKernel.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "llvm/ADT/StringMap.h"
#include <chrono>
#include <limits>
#include <mutex>

using namespace fmhajit;
using namespace fmhajit::hip;
using Clock = std::chrono::steady_clock;

static double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

namespace fmhajit {
/// A code object loaded into HIP; unloaded with the last kernel using it.
class HipModule {
public:
  static llvm::Expected<std::unique_ptr<HipModule>> load(HipRuntime &hip, llvm::StringRef image,
                                                         llvm::StringRef target) {
    hipModule_t module = nullptr;
    hipError_t result = hip.api().moduleLoadData(&module, image.data());
    if (result != kSuccess)
      return makeError(ErrorKind::Driver,
                       llvm::toString(hip.check(result, "hipModuleLoadData")) +
                           "; the code object is for " + target +
                           ": use the target rocminfo names for this GPU");
    return std::unique_ptr<HipModule>(new HipModule(hip, module));
  }
  HipModule(const HipModule &) = delete;
  HipModule &operator=(const HipModule &) = delete;
  ~HipModule() { (void)hip.api().moduleUnload(module); }

  llvm::Expected<hipFunction_t> function(llvm::StringRef name) const {
    hipFunction_t fn = nullptr;
    std::string symbol = name.str();
    if (hip.api().moduleGetFunction(&fn, module, symbol.c_str()) != kSuccess)
      return makeError(ErrorKind::Jit, "the code object has no kernel named " + name +
                                           " (the artifact does not match its spec)");
    return fn;
  }

private:
  HipModule(HipRuntime &hip, hipModule_t module) : hip(hip), module(module) {}
  HipRuntime &hip;
  hipModule_t module;
};
} // namespace fmhajit

using ModuleRegistry = LoadedModules<HipModule>;

llvm::Expected<CodeObjectKernel> fmhajit::checkKernelAbi(llvm::StringRef codeObject,
                                                        llvm::StringRef name) {
  auto kernels = readCodeObjectKernels(codeObject);
  if (!kernels)
    return kernels.takeError();
  for (CodeObjectKernel &k : *kernels) {
    if (k.name != name)
      continue;
    if (k.kernargSegmentSize != sizeof(KernelArgs) || k.args.size() != 1 ||
        k.args[0].offset != 0 || k.args[0].size != sizeof(KernelArgs))
      return makeError(ErrorKind::Jit,
                       "the code object of " + name + " declares a " +
                           llvm::Twine(k.kernargSegmentSize) +
                           "-byte kernarg segment, but this build passes one " +
                           llvm::Twine(sizeof(KernelArgs)) +
                           "-byte KernelArgs: rebuild the kernel (fmhajit cache clear)");
    return std::move(k);
  }
  return makeError(ErrorKind::Jit, "the code object declares no kernel named " + name);
}

llvm::Expected<HipKernel> HipKernel::load(const KernelSpec &spec, KernelCache &cache) {
  const ArchInfo &arch = *findArch(spec.target);
  if (arch.backend != Backend::Amdgpu)
    return makeError(ErrorKind::Usage, "target " + arch.name +
                                           " does not run on an AMD GPU; use target=gfx90a, "
                                           "gfx942, gfx950, gfx1100 or gfx1201 (or --device host)");
  auto hip = HipRuntime::get();
  if (!hip)
    return hip.takeError();
  std::string name = encodeName(spec);
  HipLoadStats stats;
  Clock::time_point start = Clock::now();
  auto artifact = compileKernel(spec, cache);
  if (!artifact)
    return artifact.takeError();
  stats.codegenMs = msSince(start);
  stats.origin = (*artifact)->origin;
  auto metadata = checkKernelAbi((*artifact)->bytes(), name);
  if (!metadata)
    return metadata.takeError();
  std::shared_ptr<const HipModule> module = ModuleRegistry::get().find(name);
  stats.moduleReused = bool(module);
  if (!module) {
    start = Clock::now();
    auto loaded = HipModule::load(*hip, (*artifact)->bytes(), arch.name);
    if (!loaded)
      return loaded.takeError();
    stats.loaderMs = msSince(start);
    module = ModuleRegistry::get().insert(name, std::move(*loaded));
  }
  auto fn = module->function(name);
  if (!fn)
    return fn.takeError();
  HipKernel kernel(spec, std::move(module), *fn);
  kernel.hip = &*hip;
  kernel.stats = stats;
  kernel.metadata = std::move(*metadata);
  kernel.threads = spec.warps * arch.waveSize;
  return std::move(kernel);
}

llvm::Error HipKernel::launch(const KernelArgs &params, hipStream_t stream) const {
  int64_t blocks = workItems(kernelSpec, params); // the family decides
  if (blocks < 1 || blocks > std::numeric_limits<int32_t>::max())
    return makeError(ErrorKind::Usage, "the problem needs " + llvm::Twine(blocks) +
                                           " workgroups; the GPU launches 1 to 2^31-1");
  // HIP copies `size` bytes from `copy` into the kernarg segment at launch.
  KernelArgs copy = params;
  size_t size = sizeof(copy);
  void *extra[] = {kLaunchParamBufferPointer, &copy, kLaunchParamBufferSize, &size,
                   kLaunchParamEnd};
  return hip->check(hip->api().moduleLaunchKernel(fn, unsigned(blocks), 1, 1, threads, 1, 1, 0,
                                                  stream, nullptr, extra),
                    "hipModuleLaunchKernel");
}

llvm::Expected<float> HipKernel::launchTimed(const KernelArgs &params, hipStream_t stream,
                                             HipTimer &timer) const {
  return timedLaunch(timer, stream, [&] { return launch(params, stream); });
}
