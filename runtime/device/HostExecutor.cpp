//===- HostExecutor.cpp - Running host kernels on a thread pool -----------===//
#include "runtime/device/HostExecutor.h"
#include "llvm/Support/Threading.h"
#include <atomic>

using namespace fmhajit;

HostExecutor::HostExecutor(unsigned threads)
    : numThreads(threads ? threads : llvm::hardware_concurrency().compute_thread_count()) {
  if (numThreads > 1)
    pool = std::make_unique<llvm::StdThreadPool>(llvm::hardware_concurrency(numThreads));
}

void HostExecutor::run(HostKernelFn fn, const KernelArgs &params, int64_t count) {
  if (!pool || count <= 1) {
    fn(&params, 0, count);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t claimed = next++; claimed < count; claimed = next++) {
      int64_t item = count - 1 - claimed;
      fn(&params, item, item + 1);
    }
  };
  llvm::ThreadPoolTaskGroup group(*pool);
  for (unsigned t = 1; t < numThreads; ++t)
    group.async(worker);
  worker(); // the caller works too
  group.wait();
}
