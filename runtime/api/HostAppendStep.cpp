//===- HostAppendStep.cpp - An append plan's launch on the host -----------===//
#include "runtime/api/HostAppendStep.h"
#include "runtime/device/PagedKv.h"
#include "specs/Errors.h"

using namespace fmhajit;
using llvm::Twine;

llvm::Error HostAppendStep::checkCache(const int32_t *blockTable,
                                       const int32_t *lengths) const {
  const KvCacheLayout &cache = problem.cache;
  int64_t rows = cache.rowsPerSequence();
  for (int64_t b = 0; b < problem.batch; ++b) {
    int64_t after = int64_t(lengths[b]) + problem.newTokens;
    if (lengths[b] < 0 || after > rows)
      return makeError(ErrorKind::Usage,
                       "AppendTensors::seqlens[" + Twine(b) +
                           "] = " + Twine(lengths[b]) + ": with " +
                           Twine(problem.newTokens) +
                           " new rows it must fit the cache's " + Twine(rows) +
                           " rows per sequence (and be >= 0)");
    if (!cache.isPaged())
      continue;
    if (std::optional<int64_t> slot =
            cache.badPageSlot(blockTable, b, lengths[b], after))
      return makeError(
          ErrorKind::Usage,
          "AppendTensors::blockTable[" + Twine(b) + "][" + Twine(*slot) +
              "] = " + Twine(blockTable[b * cache.maxPagesPerSeq + *slot]) +
              " is not a page of the pools (0 to " + Twine(cache.numPages - 1) +
              ")");
  }
  return llvm::Error::success();
}

llvm::Error HostAppendStep::run(const api::AppendTensors &t) const {
  const int32_t *lengths = t.seqlens ? t.seqlens : seqlens.data();
  if (llvm::Error err = checkCache(t.blockTable, lengths))
    return err;
  AppendKvBuffers buffers;
  buffers.kNew = t.kNew;
  buffers.vNew = t.vNew;
  buffers.cache = {t.kCache, t.vCache, t.blockTable, lengths};
  buffers.q = t.q;
  buffers.qOut = t.qOut;
  buffers.rotaryCos = t.rotaryCos ? t.rotaryCos : tables.cos.data();
  buffers.rotarySin = t.rotarySin ? t.rotarySin : tables.sin.data();
  kernel.run(makeAppendKvParams(kernel.spec(), problem, buffers), *executor);
  return llvm::Error::success();
}
