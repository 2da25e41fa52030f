//===- LoadedModules.h - The GPU modules this process has loaded ----------===//
//
// CUDA and HIP keep the same table: modules by kernel name, so that a
// kernel loads once per process however many plans use it. Never
// destroyed: at exit the driver may already be shutting down, and
// unloading is moot.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringMap.h"
#include <memory>
#include <mutex>

namespace fmhajit {

template <typename Module> class LoadedModules {
public:
  static LoadedModules &get() {
    static LoadedModules *table = new LoadedModules;
    return *table;
  }

  std::shared_ptr<const Module> find(llvm::StringRef name) {
    std::lock_guard<std::mutex> lock(mutex);
    return modules.lookup(name);
  }

  /// Keeps \p module unless another thread got there first; returns the
  /// one kept.
  std::shared_ptr<const Module> insert(llvm::StringRef name, std::shared_ptr<const Module> module) {
    std::lock_guard<std::mutex> lock(mutex);
    return modules.try_emplace(name, std::move(module)).first->second;
  }

private:
  std::mutex mutex;
  llvm::StringMap<std::shared_ptr<const Module>> modules;
};

} // namespace fmhajit
