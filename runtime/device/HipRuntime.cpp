//===- HipRuntime.cpp - The HIP runtime, loaded at run time ---------------===//
#include "runtime/device/HipRuntime.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>
#include <mutex>
#include <vector>

using namespace fmhajit;
using namespace fmhajit::hip;

llvm::Expected<std::unique_ptr<HipRuntime>>
HipRuntime::load(llvm::ArrayRef<const char *> libraries) {
  auto library =
      SharedLibrary::open(libraries, "no HIP runtime",
                          "--device hip needs an AMD GPU and ROCm (put ROCm's "
                          "lib directory on LD_LIBRARY_PATH)");
  if (!library)
    return library.takeError();
  std::unique_ptr<HipRuntime> runtime(new HipRuntime(std::move(*library)));
  if (llvm::Error err = runtime->bind())
    return std::move(err);
  if (llvm::Error err = runtime->initialize())
    return std::move(err);
  return std::move(runtime);
}

llvm::Expected<HipRuntime &> HipRuntime::get() {
  static std::once_flag once;
  static HipRuntime *runtime = nullptr; // never destroyed (see SharedLibrary)
  static std::string failure;
  std::call_once(once, [] {
    auto loaded = load(kLibraryNames);
    if (loaded)
      runtime = loaded->release();
    else
      failure = llvm::toString(loaded.takeError());
  });
  if (!runtime)
    return makeError(ErrorKind::Driver, failure);
  return *runtime;
}

llvm::Error HipRuntime::bind() {
  ErrorList missing;
  const char *advice = "update ROCm (5.0 or newer)";
  auto need = [&](auto &fn, std::initializer_list<const char *> names) {
    library.bind(fn, names, missing, advice);
  };
  need(fns.init, {"hipInit"});
  need(fns.runtimeGetVersion, {"hipRuntimeGetVersion"});
  need(fns.getErrorName, {"hipGetErrorName"});
  need(fns.getErrorString, {"hipGetErrorString"});
  need(fns.getDeviceCount, {"hipGetDeviceCount"});
  need(fns.deviceGetName, {"hipDeviceGetName"});
  need(fns.deviceTotalMem, {"hipDeviceTotalMem"});
  need(fns.deviceGetAttribute, {"hipDeviceGetAttribute"});
  // Optional: ROCm 5 has only the unversioned hipDeviceProp_t, whose
  // layout differs; without it the GPU's target must be given.
  fns.getDeviceProperties = reinterpret_cast<decltype(fns.getDeviceProperties)>(
      library.lookup({"hipGetDevicePropertiesR0600"}));
  need(fns.memGetInfo, {"hipMemGetInfo"});
  need(fns.malloc, {"hipMalloc"});
  need(fns.free, {"hipFree"});
  need(fns.memcpy, {"hipMemcpy"});
  need(fns.memsetD16, {"hipMemsetD16"});
  need(fns.memsetD32, {"hipMemsetD32"});
  need(fns.memsetD32Async, {"hipMemsetD32Async"});
  need(fns.moduleLoadData, {"hipModuleLoadData"});
  need(fns.moduleUnload, {"hipModuleUnload"});
  need(fns.moduleGetFunction, {"hipModuleGetFunction"});
  need(fns.moduleLaunchKernel, {"hipModuleLaunchKernel"});
  need(fns.streamCreateWithFlags, {"hipStreamCreateWithFlags"});
  need(fns.streamDestroy, {"hipStreamDestroy"});
  need(fns.streamSynchronize, {"hipStreamSynchronize"});
  need(fns.eventCreate, {"hipEventCreate"});
  need(fns.eventDestroy, {"hipEventDestroy"});
  need(fns.eventRecord, {"hipEventRecord"});
  need(fns.eventSynchronize, {"hipEventSynchronize"});
  need(fns.eventElapsedTime, {"hipEventElapsedTime"});
  return missing.take();
}

llvm::Error HipRuntime::check(hipError_t result, llvm::StringRef call) const {
  if (result == kSuccess)
    return llvm::Error::success();
  const char *name = fns.getErrorName(result);
  const char *text = fns.getErrorString(result);
  return makeError(ErrorKind::Driver,
                   call + " failed: " + (name ? name : "an unknown HIP error") +
                       " (" + (text ? text : "no description") + ")");
}

llvm::Error HipRuntime::initialize() {
  if (llvm::Error err = check(fns.init(0), "hipInit"))
    return err;
  int count = 0;
  if (llvm::Error err = check(fns.getDeviceCount(&count), "hipGetDeviceCount"))
    return err;
  if (count < 1)
    return makeError(ErrorKind::Driver,
                     "HIP sees no AMD GPU; check HIP_VISIBLE_DEVICES and "
                     "that this user may use /dev/kfd");
  if (llvm::Error err =
          check(fns.runtimeGetVersion(&version), "hipRuntimeGetVersion"))
    return err;
  return queryDevice();
}

llvm::Error HipRuntime::queryDevice() {
  char name[256] = {};
  if (llvm::Error err =
          check(fns.deviceGetName(name, sizeof(name) - 1, info.ordinal),
                "hipDeviceGetName"))
    return err;
  info.name = name;
  if (llvm::Error err =
          check(fns.deviceTotalMem(&info.totalMemory, info.ordinal),
                "hipDeviceTotalMem"))
    return err;
  if (llvm::Error err =
          check(fns.deviceGetAttribute(&info.computeUnits,
                                       kAttrMultiprocessorCount, info.ordinal),
                "hipDeviceGetAttribute"))
    return err;
  if (!fns.getDeviceProperties)
    return llvm::Error::success();
  std::vector<char> props(2 * kDevicePropBytes, '\0');
  if (llvm::Error err =
          check(fns.getDeviceProperties(props.data(), info.ordinal),
                "hipGetDevicePropertiesR0600"))
    return err;
  const char *gcnArchName = props.data() + kDevicePropGcnArchNameOffset;
  info.gfxName = std::string(gcnArchName,
                             strnlen(gcnArchName, kDevicePropGcnArchNameBytes));
  info.target = targetForGfxName(info.gfxName);
  return llvm::Error::success();
}

std::optional<std::string> fmhajit::targetForGfxName(llvm::StringRef gfxName) {
  llvm::StringRef processor = gfxName.split(':').first;
  const ArchInfo *arch = findArch(processor);
  if (!arch || arch->backend != Backend::Amdgpu)
    return std::nullopt;
  return arch->name;
}

std::string HipRuntime::noTargetReason() const {
  if (info.gfxName.empty())
    return "this HIP runtime cannot report " + info.name +
           "'s gfx name (it needs ROCm 6 or newer): set the target rocminfo "
           "names";
  return info.name + " is " + info.gfxName +
         ", which no fmhajit target runs on; fmhajit runs gfx90a, gfx942, "
         "gfx950, gfx1100 and "
         "gfx1201";
}

// hipRuntimeGetVersion: major * 10000000 + minor * 100000 + patch.
std::string HipRuntime::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << info.name << " (" << info.target.value_or("no fmhajit target") << ", "
     << info.computeUnits << " CUs, "
     << llvm::format("%.0f GiB", double(info.totalMemory) / (1ull << 30))
     << "), HIP " << version / 10000000 << "." << version / 100000 % 100 << "."
     << version % 100000 << " (" << library.name() << ")";
  return text;
}
