//===- HostExecutor.cpp - Running host kernels on a thread pool -----------===//
#include "runtime/device/HostExecutor.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/Threading.h"
#include <atomic>

using namespace fmhajit;

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
  if (numThreads > 1)
    pool = std::make_unique<llvm::StdThreadPool>(
        llvm::hardware_concurrency(numThreads));
}

void HostExecutor::run(HostKernelFn fn, const KernelArgs &params,
                       int64_t count) {
  if (!pool || count <= 1) {
    callKernel(fn, params, 0, count);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t claimed = next++; claimed < count; claimed = next++) {
      int64_t item = count - 1 - claimed;
      callKernel(fn, params, item, item + 1);
    }
  };
  llvm::ThreadPoolTaskGroup group(*pool);
  for (unsigned t = 1; t < numThreads; ++t)
    group.async(worker);
  worker(); // the caller works too
  group.wait();
}
