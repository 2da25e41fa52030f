//===- HostJit.h - Loading host kernel objects into this process ----------===//
#pragma once

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <mutex>

namespace fmhajit {

/// One ORC LLJIT per process. Kernel objects come from the cache (compiled
/// by compileKernel), so the JIT only links: it never runs codegen itself.
class HostJit {
public:
  /// The process-wide JIT, created on first use.
  static llvm::Expected<HostJit &> global();

  /// The address of kernel \p name, linking \p object (an ELF object that
  /// defines it) the first time the name is seen. Thread-safe.
  llvm::Expected<void *> load(llvm::StringRef name, llvm::StringRef object);

private:
  explicit HostJit(std::unique_ptr<llvm::orc::LLJIT> jit)
      : jit(std::move(jit)) {}

  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::mutex mutex;
  llvm::StringMap<void *> loaded;
};

} // namespace fmhajit
