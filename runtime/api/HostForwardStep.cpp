//===- HostForwardStep.cpp - A plan's launches on the host ----------------===//
#include "runtime/api/HostForwardStep.h"
#include "llvm/Support/Threading.h"
#include <map>
#include <mutex>

using namespace fmhajit;

std::shared_ptr<HostExecutor> fmhajit::sharedHostExecutor(unsigned threads) {
  static std::mutex mutex;
  static std::map<unsigned, std::shared_ptr<HostExecutor>> executors;
  std::lock_guard<std::mutex> lock(mutex);
  // Keyed by the resolved count, so 0 and the machine's count share a pool.
  unsigned workers =
      threads ? threads : llvm::hardware_concurrency().compute_thread_count();
  std::shared_ptr<HostExecutor> &slot = executors[workers];
  if (!slot)
    slot = std::make_shared<HostExecutor>(workers);
  return slot;
}

// The hot path of api::run on the host: bind the caller's pointers into a
// copy of the parameters and run. Nothing allocates.
llvm::Error HostForwardStep::run(const api::Tensors &t) const {
  KernelArgs p = binding.bind(t);
  executor->run(fn, p, items);
  return llvm::Error::success();
}
