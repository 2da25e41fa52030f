//===- HostForwardStep.cpp - A plan's launches on the host ----------------===//
#include "runtime/HostForwardStep.h"
#include <map>
#include <mutex>

using namespace fmhajit;

std::shared_ptr<HostExecutor> fmhajit::sharedHostExecutor(unsigned threads) {
  static std::mutex mutex;
  static std::map<unsigned, std::shared_ptr<HostExecutor>> executors;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<HostExecutor> &slot = executors[threads];
  if (!slot)
    slot = std::make_shared<HostExecutor>(threads);
  return slot;
}

// The hot path of api::run on the host: bind the caller's pointers into a
// copy of the parameters and run. Nothing allocates.
llvm::Error HostForwardStep::run(const api::Tensors &t) const {
  FwdParams p = binding.bind(t);
  executor->run(fn, p, items);
  return llvm::Error::success();
}
