//===- HostExecutor.cpp - Running host kernels on a thread pool -----------===//
#include "runtime/device/HostExecutor.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/Threading.h"
#include <chrono>

using namespace fmhajit;

/// How long a worker spins for the next job before it sleeps: longer than
/// the gap between a serving loop's decode steps, short enough that an idle
/// process gives its cores back at once.
static constexpr std::chrono::microseconds kSpinBeforeSleep{200};

/// Calls the JIT-compiled \p fn. Exempt from UBSan's function-type check
/// (-fsanitize=function, FMHAJIT_SANITIZE): it reads a type signature from
/// the 8 bytes before the callee, which only clang-compiled functions carry,
/// and JIT code often starts a page whose predecessor is unmapped, so the
/// check itself faults. The kernel's type is fixed by KernelAbi.h.
LLVM_NO_SANITIZE("function")
static void callKernel(HostKernelFn fn, const KernelArgs &params, int64_t begin,
                       int64_t end) {
  fn(&params, begin, end);
}

HostExecutor::HostExecutor(unsigned threads)
    : numThreads(threads
                     ? threads
                     : llvm::hardware_concurrency().compute_thread_count()) {
  for (unsigned t = 1; t < numThreads; ++t)
    workers.emplace_back([this] { workerLoop(); });
}

HostExecutor::~HostExecutor() {
  {
    std::lock_guard<std::mutex> lock(sleepMutex);
    stopping = true;
  }
  generation.fetch_add(1); // spinning workers look, then see `stopping`
  wake.notify_all();
  for (std::thread &w : workers)
    w.join();
}

void HostExecutor::claimItems() {
  for (int64_t claimed = nextItem++; claimed < jobCount; claimed = nextItem++) {
    int64_t item = jobCount - 1 - claimed;
    callKernel(jobFn, *jobParams, item, item + 1);
  }
}

void HostExecutor::run(HostKernelFn fn, const KernelArgs &params,
                       int64_t count) {
  if (workers.empty() || count <= 1) {
    callKernel(fn, params, 0, count);
    return;
  }
  std::lock_guard<std::mutex> one(runMutex);
  jobFn = fn, jobParams = &params, jobCount = count;
  nextItem.store(0, std::memory_order_relaxed);
  workersLeft.store(unsigned(workers.size()), std::memory_order_relaxed);
  // seq_cst with the sleepers' count (a worker counts itself, then reads
  // the generation): either it sees this job or this call sees it asleep.
  generation.fetch_add(1);
  if (sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(sleepMutex);
    wake.notify_all();
  }
  claimItems(); // the caller works too
  // Every worker finishes the job before the next can replace its fields.
  while (workersLeft.load(std::memory_order_acquire) > 0)
    std::this_thread::yield();
}

void HostExecutor::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto deadline = std::chrono::steady_clock::now() + kSpinBeforeSleep;
    while (generation.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (generation.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(sleepMutex);
      sleepers.fetch_add(1);
      wake.wait(lock, [&] { return stopping || generation.load() != seen; });
      sleepers.fetch_sub(1);
    }
    if (stopping.load())
      return;
    seen = generation.load(std::memory_order_acquire);
    claimItems();
    workersLeft.fetch_sub(1, std::memory_order_release);
  }
}
