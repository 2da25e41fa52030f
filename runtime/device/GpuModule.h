//===- GpuModule.h - A module loaded into a GPU driver, once per process --===//
//
// GpuModule owns a loaded module (PTX JIT-compiled by the CUDA driver, a
// code object loaded by HIP) and unloads it with its last user.
// LoadedModules keeps them by kernel name, so that a kernel loads once per
// process however many plans use it. The table is never destroyed: at exit
// the driver may already be shutting down, and unloading is moot.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuDriver.h"
#include "llvm/ADT/StringMap.h"
#include <memory>
#include <mutex>
#include <string>

namespace fmhajit {

class GpuModule {
public:
  /// Loads \p image, compiled for \p arch, into \p driver.
  static llvm::Expected<std::unique_ptr<GpuModule>>
  load(GpuDriver &driver, const std::string &image, const ArchInfo &arch);
  GpuModule(const GpuModule &) = delete;
  GpuModule &operator=(const GpuModule &) = delete;
  ~GpuModule() { driver.unloadModule(module); }

  /// The kernel named \p name (an ErrorKind::Jit error if it is missing).
  llvm::Expected<GpuFunctionHandle> function(llvm::StringRef name) const {
    return driver.function(module, name);
  }
  /// The bytes of the module's global \p name (GpuDriver::readGlobal).
  llvm::Expected<std::string> readGlobal(llvm::StringRef name) const {
    return driver.readGlobal(module, name);
  }
  /// The driver's JIT info log of the load (may be empty).
  const std::string &infoLog() const { return info; }

private:
  GpuModule(GpuDriver &driver, GpuLoadedImage image)
      : driver(driver), module(image.module), info(std::move(image.infoLog)) {}
  GpuDriver &driver;
  GpuModuleHandle module;
  std::string info;
};

class LoadedModules {
public:
  static LoadedModules &get();

  std::shared_ptr<const GpuModule> find(llvm::StringRef name);
  /// Keeps \p module unless another thread got there first; returns the
  /// one kept.
  std::shared_ptr<const GpuModule>
  insert(llvm::StringRef name, std::shared_ptr<const GpuModule> module);

private:
  std::mutex mutex;
  llvm::StringMap<std::shared_ptr<const GpuModule>> modules;
};

/// Global \p global of the module this process loaded for kernel \p kernel
/// (a Usage error if it loaded none).
llvm::Expected<std::string> readLoadedGlobal(llvm::StringRef kernel,
                                             llvm::StringRef global);

} // namespace fmhajit
