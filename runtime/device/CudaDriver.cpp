//===- CudaDriver.cpp - The CUDA driver, loaded at run time ---------------===//
#include "runtime/device/CudaDriver.h"
#include "specs/Errors.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <dlfcn.h>
#include <mutex>

using namespace fmhajit;
using namespace fmhajit::cuda;

llvm::Expected<std::unique_ptr<CudaDriver>>
CudaDriver::load(const char *library) {
  // RTLD_LOCAL: the driver's symbols stay out of the process's global
  // namespace, which the host JIT searches. The handle is never closed: a
  // driver unloaded under live contexts crashes at exit.
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return makeError(ErrorKind::Driver,
                     llvm::Twine("no CUDA driver: ") + library +
                         " could not be loaded (" +
                         (why ? why : "unknown reason") +
                         "); --device cuda needs an NVIDIA GPU and driver");
  }
  std::unique_ptr<CudaDriver> driver(new CudaDriver(handle));
  if (llvm::Error err = driver->resolve())
    return std::move(err);
  if (llvm::Error err = driver->initialize())
    return std::move(err);
  return std::move(driver);
}

llvm::Expected<CudaDriver &> CudaDriver::get() {
  static std::once_flag once;
  static CudaDriver *driver = nullptr; // never destroyed (see load())
  static std::string failure;
  std::call_once(once, [] {
    auto loaded = load(kLibraryName);
    if (loaded)
      driver = loaded->release();
    else
      failure = llvm::toString(loaded.takeError());
  });
  if (!driver)
    return makeError(ErrorKind::Driver, failure);
  if (llvm::Error err = driver->makeCurrent())
    return std::move(err);
  return *driver;
}

// Resolves each entry point by the name the driver exports for the API
// version cuda.h maps it to (cuMemAlloc -> cuMemAlloc_v2, ...).
llvm::Error CudaDriver::resolve() {
  ErrorList missing;
  auto bind = [&](auto &fn, std::initializer_list<const char *> names) {
    for (const char *name : names)
      if (void *address = dlsym(library, name)) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(address);
        return;
      }
    missing.add(ErrorKind::Driver,
                llvm::Twine("the CUDA driver lacks ") + *names.begin() +
                    "; update the NVIDIA driver (CUDA 12 or newer)");
  };
  bind(fns.init, {"cuInit"});
  bind(fns.driverGetVersion, {"cuDriverGetVersion"});
  bind(fns.getErrorName, {"cuGetErrorName"});
  bind(fns.getErrorString, {"cuGetErrorString"});
  bind(fns.deviceGetCount, {"cuDeviceGetCount"});
  bind(fns.deviceGet, {"cuDeviceGet"});
  bind(fns.deviceGetAttribute, {"cuDeviceGetAttribute"});
  bind(fns.deviceGetName, {"cuDeviceGetName"});
  bind(fns.deviceTotalMem, {"cuDeviceTotalMem_v2"});
  bind(fns.devicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  bind(fns.ctxSetCurrent, {"cuCtxSetCurrent"});
  bind(fns.ctxSynchronize, {"cuCtxSynchronize"});
  bind(fns.memGetInfo, {"cuMemGetInfo_v2"});
  bind(fns.memAlloc, {"cuMemAlloc_v2"});
  bind(fns.memFree, {"cuMemFree_v2"});
  bind(fns.memcpyHtoD, {"cuMemcpyHtoD_v2"});
  bind(fns.memcpyDtoH, {"cuMemcpyDtoH_v2"});
  bind(fns.memsetD16, {"cuMemsetD16_v2"});
  bind(fns.memsetD32, {"cuMemsetD32_v2"});
  bind(fns.memsetD32Async, {"cuMemsetD32Async"});
  bind(fns.moduleLoadDataEx, {"cuModuleLoadDataEx"});
  bind(fns.moduleUnload, {"cuModuleUnload"});
  bind(fns.moduleGetGlobal, {"cuModuleGetGlobal_v2"});
  bind(fns.moduleGetFunction, {"cuModuleGetFunction"});
  bind(fns.funcGetAttribute, {"cuFuncGetAttribute"});
  bind(fns.funcSetAttribute, {"cuFuncSetAttribute"});
  bind(fns.launchKernel, {"cuLaunchKernel"});
  bind(fns.launchKernelEx, {"cuLaunchKernelEx"});
  bind(fns.streamCreate, {"cuStreamCreate"});
  bind(fns.streamDestroy, {"cuStreamDestroy_v2"});
  bind(fns.streamSynchronize, {"cuStreamSynchronize"});
  bind(fns.eventCreate, {"cuEventCreate"});
  bind(fns.eventDestroy, {"cuEventDestroy_v2"});
  bind(fns.eventRecord, {"cuEventRecord"});
  bind(fns.eventSynchronize, {"cuEventSynchronize"});
  // cuda.h maps cuEventElapsedTime to _v2 from CUDA 12.8; older drivers
  // export only the original, with the same signature.
  bind(fns.eventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  bind(fns.tensorMapEncodeTiled, {"cuTensorMapEncodeTiled"});
  // Optional: without it, each launch of a TMA kernel encodes its maps
  // (GpuTensorMaps.h).
  fns.tensorMapReplaceAddress =
      reinterpret_cast<decltype(fns.tensorMapReplaceAddress)>(
          dlsym(library, "cuTensorMapReplaceAddress"));
  return missing.take();
}

llvm::Error CudaDriver::check(CUresult result, llvm::StringRef call) const {
  if (result == kSuccess)
    return llvm::Error::success();
  const char *name = nullptr, *text = nullptr;
  if (fns.getErrorName(result, &name) != kSuccess || !name)
    name = "an unknown CUDA error";
  if (fns.getErrorString(result, &text) != kSuccess || !text)
    text = "no description";
  return makeError(ErrorKind::Driver, call + " failed: " + name + " (" + text +
                                          ", code " + llvm::Twine(result) +
                                          ")");
}

llvm::Error CudaDriver::initialize() {
  if (llvm::Error err = check(fns.init(0), "cuInit"))
    return err;
  if (llvm::Error err =
          check(fns.driverGetVersion(&version), "cuDriverGetVersion"))
    return err;
  int count = 0;
  if (llvm::Error err = check(fns.deviceGetCount(&count), "cuDeviceGetCount"))
    return err;
  if (count == 0)
    return makeError(ErrorKind::Driver, "the CUDA driver sees no GPU (check "
                                        "CUDA_VISIBLE_DEVICES and nvidia-smi)");
  if (llvm::Error err = queryDevice())
    return err;
  CUdevice device = 0;
  if (llvm::Error err =
          check(fns.deviceGet(&device, info.ordinal), "cuDeviceGet"))
    return err;
  return check(fns.devicePrimaryCtxRetain(&ctx, device),
               "cuDevicePrimaryCtxRetain");
}

llvm::Error CudaDriver::queryDevice() {
  CUdevice device = 0;
  if (llvm::Error err =
          check(fns.deviceGet(&device, info.ordinal), "cuDeviceGet"))
    return err;
  char name[256] = {};
  if (llvm::Error err = check(fns.deviceGetName(name, sizeof(name) - 1, device),
                              "cuDeviceGetName"))
    return err;
  info.name = name;
  struct Query {
    int *field;
    CUdeviceAttribute attribute;
  };
  const Query queries[] = {
      {&info.cc.major, kAttrComputeCapabilityMajor},
      {&info.cc.minor, kAttrComputeCapabilityMinor},
      {&info.computeUnits, kAttrMultiprocessorCount},
      {&info.maxThreadsPerBlock, kAttrMaxThreadsPerBlock},
      {&info.maxSharedPerBlock, kAttrMaxSharedMemoryPerBlock},
      {&info.maxSharedPerBlockOptin, kAttrMaxSharedMemoryPerBlockOptin}};
  for (const Query &q : queries)
    if (llvm::Error err =
            check(fns.deviceGetAttribute(q.field, q.attribute, device),
                  "cuDeviceGetAttribute"))
      return err;
  if (llvm::Error err = check(fns.deviceTotalMem(&info.totalMemory, device),
                              "cuDeviceTotalMem"))
    return err;
  if (std::optional<llvm::StringRef> target = targetForCapability(info.cc))
    info.target = target->str();
  return llvm::Error::success();
}

llvm::Error CudaDriver::makeCurrent() const {
  // The current context is per thread; a thread that has set it once keeps
  // it, since this process uses only this one context.
  thread_local CUcontext current = nullptr;
  if (current == ctx)
    return llvm::Error::success();
  if (llvm::Error err = check(fns.ctxSetCurrent(ctx), "cuCtxSetCurrent"))
    return err;
  current = ctx;
  return llvm::Error::success();
}

std::string CudaDriver::ptxNote() const {
  if (ptxVersion())
    return "";
  return "CUDA driver " + driverVersionString(version) +
         " predates CUDA 12.0; emitting each target's minimum PTX ISA, which "
         "this driver may reject: update the NVIDIA driver";
}

std::string CudaDriver::noTargetReason() const {
  return info.name + " has compute capability " + info.cc.str() +
         ", which no fmhajit target runs on; fmhajit needs 8.0 or newer";
}

std::string CudaDriver::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << info.name << " (" << info.target.value_or("no fmhajit target")
     << ", cc " << info.cc.str() << ", " << info.computeUnits << " SMs, "
     << llvm::format("%.0f GiB", double(info.totalMemory) / (1ull << 30))
     << "), driver " << driverVersionString(version);
  if (unsigned ptx = ptxVersion())
    os << ", PTX " << ptx / 10 << "." << ptx % 10;
  return text;
}
