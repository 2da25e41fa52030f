//===- GpuModule.cpp - A module loaded into a GPU driver, once per process ===//
#include "runtime/device/GpuModule.h"
#include <chrono>

using namespace fmhajit;

llvm::Expected<std::unique_ptr<GpuModule>>
GpuModule::load(GpuDriver &driver, llvm::StringRef image,
                const ArchInfo &arch) {
  auto start = std::chrono::steady_clock::now();
  auto loaded = driver.loadModule(image, arch);
  if (!loaded)
    return loaded.takeError();
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  return std::unique_ptr<GpuModule>(
      new GpuModule(driver, std::move(*loaded), ms));
}

LoadedModules &LoadedModules::get() {
  static LoadedModules *table = new LoadedModules;
  return *table;
}

std::shared_ptr<const GpuModule> LoadedModules::find(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(mutex);
  return modules.lookup(name);
}

std::shared_ptr<const GpuModule>
LoadedModules::insert(llvm::StringRef name,
                      std::shared_ptr<const GpuModule> module) {
  std::lock_guard<std::mutex> lock(mutex);
  return modules.try_emplace(name, std::move(module)).first->second;
}
