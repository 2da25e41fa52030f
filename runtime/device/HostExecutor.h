//===- HostExecutor.h - Running host kernels on a thread pool -------------===//
//
// A fork-join pool for calls that last well under a millisecond (a decode
// step reads a few MiB): llvm::ThreadPool queues one task per worker behind
// a mutex and wakes each through a condition variable, which on a 16-vCPU
// VM cost 0.2-0.3 ms a call (a call's median against its best). Here each
// call publishes one job; workers spin on its generation for a while after
// their last job (as OpenMP's runtimes do) and only then sleep, so calls
// that follow each other reach workers that are already awake.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace fmhajit {

/// Runs a host kernel's work items on a persistent pool. Items are claimed
/// one at a time from the end (under causal masks the last query tiles are
/// the heaviest, so they start first), which balances uneven work.
class HostExecutor {
public:
  /// An executor with \p threads workers (0: one per hardware thread).
  explicit HostExecutor(unsigned threads);
  ~HostExecutor();
  HostExecutor(const HostExecutor &) = delete;
  HostExecutor &operator=(const HostExecutor &) = delete;

  unsigned threads() const { return numThreads; }

  /// Runs items [0, count) of \p fn on \p params and waits for them. One
  /// call at a time per executor (callers serialize on a mutex).
  void run(HostKernelFn fn, const KernelArgs &params, int64_t count);

private:
  void workerLoop();
  /// Claims and runs the current job's items until none is left.
  void claimItems();

  unsigned numThreads;
  std::vector<std::thread> workers; ///< numThreads - 1; the caller is one
  std::mutex runMutex;              ///< one job at a time

  // The job: written by run() before `generation` is bumped.
  HostKernelFn jobFn = nullptr;
  const KernelArgs *jobParams = nullptr;
  int64_t jobCount = 0;
  std::atomic<int64_t> nextItem{0};
  std::atomic<unsigned> workersLeft{0}; ///< workers yet to finish the job
  std::atomic<uint64_t> generation{0};  ///< one more per job

  // Sleeping workers, woken through `wake` under `sleepMutex`.
  std::mutex sleepMutex;
  std::condition_variable wake;
  std::atomic<unsigned> sleepers{0};
  std::atomic<bool> stopping{false}; ///< set under sleepMutex
};

} // namespace fmhajit
