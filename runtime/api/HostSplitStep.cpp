//===- HostSplitStep.cpp - A plan's split-KV launches on the host ---------===//
#include "runtime/api/HostSplitStep.h"
#include <cstdint>
#include <vector>

using namespace fmhajit;

uint8_t *fmhajit::hostWorkspace(int64_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < size_t(bytes))
    buffer.resize(size_t(bytes));
  return buffer.data();
}

llvm::Error HostSplitStep::run(const api::Tensors &t) const {
  uint8_t *base = t.workspace ? static_cast<uint8_t *>(t.workspace)
                              : hostWorkspace(workspace.bytes);
  KernelArgs p = binding.bind(t);
  setSplits(p, unsigned(p.numSplits), splitWorkspaceAt(base, workspace));
  kernels.run(p, *executor);
  return llvm::Error::success();
}
