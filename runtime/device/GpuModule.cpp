//===- GpuModule.cpp - A module loaded into a GPU driver, once per process ===//
#include "runtime/device/GpuModule.h"
#include "specs/Errors.h"

using namespace fmhajit;

llvm::Expected<std::unique_ptr<GpuModule>>
GpuModule::load(GpuDriver &driver, const std::string &image,
                const ArchInfo &arch) {
  auto loaded = driver.loadModule(image, arch);
  if (!loaded)
    return loaded.takeError();
  return std::unique_ptr<GpuModule>(new GpuModule(driver, std::move(*loaded)));
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

llvm::Expected<std::string> fmhajit::readLoadedGlobal(llvm::StringRef kernel,
                                                      llvm::StringRef global) {
  std::shared_ptr<const GpuModule> module = LoadedModules::get().find(kernel);
  if (!module)
    return makeError(ErrorKind::Usage,
                     "this process loaded no module for kernel " + kernel);
  return module->readGlobal(global);
}
