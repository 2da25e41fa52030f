//===- SplitHeuristic.cpp - How many parts to cut a key range into --------===//
#include "runtime/api/SplitHeuristic.h"
#include "ir/KernelAbi.h"
#include "specs/ArchTable.h"
#include "llvm/Support/MathExtras.h"
#include <algorithm>
#include <cmath>

using namespace fmhajit;

unsigned fmhajit::chooseNumSplits(int64_t items, int64_t keyTiles,
                                  unsigned workers) {
  if (workers == 0 || items <= 0)
    return 1;
  auto wanted =
      int64_t(std::ceil(kGpuBlocksPerSm * double(workers) / double(items)));
  if (wanted <= 1)
    return 1;
  int64_t n = int64_t(llvm::PowerOf2Ceil(uint64_t(wanted)));
  int64_t cap = std::min<int64_t>(kGpuMaxSplits, keyTiles);
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(n, cap)));
}

unsigned fmhajit::chooseHostNumSplits(int64_t items, int64_t seqlenK,
                                      unsigned workers, int64_t groupSize,
                                      int64_t kvRowBytes) {
  int64_t minKeys =
      items < int64_t(workers) ? kHostMinSplitKeysIdle : kHostMinSplitKeys;
  if (items <= 0 || seqlenK < minKeys)
    return 1;
  // Balance only matters with several threads; cache reuse with any.
  int64_t wanted =
      workers > 1 ? (kHostItemsPerWorker * workers + items - 1) / items : 1;
  if (groupSize > 1 && kvRowBytes > 0) { // parts the group can share in cache
    int64_t keysPerPart =
        std::max<int64_t>(1, kHostCachedPartBytes / kvRowBytes);
    wanted = std::max(wanted, (seqlenK + keysPerPart - 1) / keysPerPart);
  }
  int64_t n =
      int64_t(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(wanted, 1))));
  int64_t cap = std::min<int64_t>(kMaxSplits, seqlenK / kHostMinKeysPerSplit);
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(n, cap)));
}

unsigned fmhajit::chooseNumSplits(const KernelSpec &spec,
                                  const AttentionProblem &problem,
                                  unsigned workers) {
  int64_t rows = itemQueryRows(spec, problem.maxSeqlenQ(), problem.headsQ,
                               problem.headsKv);
  int64_t qTiles = (rows + spec.bm - 1) / spec.bm;
  int64_t items =
      problem.batch * itemHeads(spec, problem.headsQ, problem.headsKv) * qTiles;
  // Under pack_gqa the group shares one item: no other item reads its part.
  int64_t group = spec.pack_gqa
                      ? 1
                      : problem.headsQ / std::max<int64_t>(1, problem.headsKv);
  const ArchInfo *arch = findArch(spec.target);
  if (!arch || arch->backend == Backend::Host)
    return chooseHostNumSplits(items, problem.maxSeqlenK(), workers, group,
                               int64_t(spec.d + spec.headDimV()) *
                                   dtypeBytes(spec.dtype));
  int64_t keyTiles = (problem.maxSeqlenK() + spec.bn - 1) / spec.bn;
  return chooseNumSplits(items, keyTiles, workers);
}
