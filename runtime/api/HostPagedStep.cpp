//===- HostPagedStep.cpp - A plan's paged-attention launches on the host --===//
#include "runtime/api/HostPagedStep.h"
#include "specs/Errors.h"

using namespace fmhajit;
using llvm::Twine;

llvm::Error HostPagedStep::checkCache(const int32_t *blockTable,
                                      const int32_t *lengths) const {
  int64_t rows = cache.rowsPerSequence();
  for (size_t b = 0; b < seqlensK.size(); ++b) {
    int64_t len = lengths[b];
    if (len < 1 || len > rows)
      return makeError(ErrorKind::Usage,
                       "Tensors::seqlensK[" + Twine(b) + "] = " + Twine(len) +
                           ": a sequence's keys must be from 1 to "
                           "maxPagesPerSeq x pageSize = " +
                           Twine(rows));
    if (std::optional<int64_t> slot =
            cache.badPageSlot(blockTable, int64_t(b), 0, len))
      return makeError(
          ErrorKind::Usage,
          "Tensors::blockTable[" + Twine(b) + "][" + Twine(*slot) +
              "] = " + Twine(blockTable[b * cache.maxPagesPerSeq + *slot]) +
              " is not a page of the pools (0 to " + Twine(cache.numPages - 1) +
              ")");
  }
  return llvm::Error::success();
}

llvm::Error HostPagedStep::run(const api::Tensors &t) const {
  const int32_t *lengths = t.seqlensK ? t.seqlensK : seqlensK.data();
  if (llvm::Error err = checkCache(t.blockTable, lengths))
    return err;
  KernelArgs p = binding.bind(t);
  p.blockTable = t.blockTable;
  p.cacheSeqlens = lengths;
  if (p.numSplits > 1) {
    uint8_t *base = t.workspace ? static_cast<uint8_t *>(t.workspace)
                                : hostWorkspace(workspace.bytes);
    setSplits(p, unsigned(p.numSplits), splitWorkspaceAt(base, workspace));
  }
  kernels.run(p, *executor);
  return llvm::Error::success();
}
