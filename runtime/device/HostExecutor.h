//===- HostExecutor.h - Running host kernels on a thread pool -------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "llvm/Support/ThreadPool.h"
#include <memory>

namespace fmhajit {

/// Runs a host kernel's work items on a persistent pool. Items are claimed
/// one at a time from the end (under causal masks the last query tiles are
/// the heaviest, so they start first), which balances uneven work.
class HostExecutor {
public:
  /// An executor with \p threads workers (0: one per hardware thread).
  explicit HostExecutor(unsigned threads);

  unsigned threads() const { return numThreads; }

  /// Runs items [0, count) of \p fn on \p params and waits for them.
  void run(HostKernelFn fn, const KernelArgs &params, int64_t count);

private:
  unsigned numThreads;
  std::unique_ptr<llvm::StdThreadPool> pool; ///< null when single-threaded
};

} // namespace fmhajit
