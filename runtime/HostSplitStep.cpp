//===- HostSplitStep.cpp - A plan's split-KV launches on the host ---------===//
#include "runtime/HostSplitStep.h"
#include <cstdint>
#include <vector>

using namespace fmhajit;

// A per-thread buffer, not one per plan: plans may run on several threads
// at once, and a thread runs one plan at a time.
static uint8_t *threadWorkspace(int64_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < size_t(bytes))
    buffer.resize(size_t(bytes));
  return buffer.data();
}

llvm::Error HostSplitStep::run(const api::Tensors &t) const {
  uint8_t *base =
      t.workspace ? static_cast<uint8_t *>(t.workspace) : threadWorkspace(workspace.bytes);
  FwdParams p = binding.bind(t);
  setSplits(p, unsigned(p.numSplits),
            {reinterpret_cast<float *>(base + workspace.oAccumOffset),
             reinterpret_cast<float *>(base + workspace.lseAccumOffset)});
  kernels.run(p, *executor);
  return llvm::Error::success();
}
