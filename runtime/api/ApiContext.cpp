//===- ApiContext.cpp - What the public entry points look up --------------===//
#include "runtime/api/ApiContext.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/device/GpuDriver.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include <map>
#include <mutex>

using namespace fmhajit;

// The GPU's own target: its compute capability's on CUDA, its gfx name's
// on HIP.
static llvm::Expected<std::string> gpuDeviceTarget(Backend backend) {
  auto driver = gpuDriverFor(backend);
  if (!driver)
    return makeError(
        ErrorKind::Driver,
        toString(driver.takeError()) +
            " (to plan for a GPU this machine lacks, set Options::target and "
            "Options::load = false)");
  if (!driver->device().target)
    return makeError(ErrorKind::Unsupported, driver->noTargetReason());
  return *driver->device().target;
}

static Backend backendOf(api::Device device) {
  switch (device) {
  case api::Device::Host:
    return Backend::Host;
  case api::Device::Cuda:
    return Backend::Nvptx;
  case api::Device::Hip:
    return Backend::Amdgpu;
  }
  return Backend::Host;
}

static const char *deviceFor(Backend backend) {
  switch (backend) {
  case Backend::Host:
    return "Device::Host";
  case Backend::Nvptx:
    return "Device::Cuda";
  case Backend::Amdgpu:
    return "Device::Hip";
  }
  return "?";
}

llvm::Expected<std::string>
fmhajit::resolveTarget(api::Device device, const std::string &requested) {
  if (requested.empty())
    return device == api::Device::Host ? std::string("host")
                                       : gpuDeviceTarget(backendOf(device));
  const ArchInfo *arch = findArch(requested);
  if (!arch)
    return makeError(ErrorKind::Usage, "target " + requested +
                                           " is unknown; use one of " +
                                           allArchNames());
  if (arch->backend != backendOf(device))
    return makeError(ErrorKind::Usage,
                     "target " + requested + " does not run on device " +
                         deviceName(device) + ": use a " + deviceName(device) +
                         " target, or set Problem::device to " +
                         deviceFor(arch->backend));
  return requested;
}

unsigned fmhajit::splitWorkers(api::Device device, unsigned hostThreads) {
  if (device == api::Device::Host)
    return hostThreads;
  auto driver = gpuDriverFor(backendOf(device));
  if (!driver) {
    llvm::consumeError(driver.takeError());
    return 0;
  }
  return unsigned(driver->device().computeUnits);
}

llvm::Expected<KernelCache &> fmhajit::kernelCacheFor(const std::string &dir) {
  if (dir.empty())
    return KernelCache::global();
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<KernelCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<KernelCache> &slot = caches[dir];
  if (!slot) {
    llvm::Expected<CacheConfig> config = CacheConfig::fromEnvironment();
    if (!config)
      return config.takeError();
    config->dir = dir;
    config->disk = true;
    auto cache = KernelCache::create(std::move(*config));
    if (!cache)
      return cache.takeError();
    slot = std::move(*cache);
  }
  return *slot;
}
