//===- SplitHeuristic.cpp - How many parts to cut a key range into --------===//
#include "runtime/SplitHeuristic.h"
#include <algorithm>

using namespace fmhajit;

unsigned fmhajit::chooseNumSplits(int64_t items, int64_t keyTiles, unsigned workers) {
  if (workers <= 1 || items <= 0 || 5 * items >= 4 * int64_t(workers))
    return 1;
  int64_t maxSplits = std::min<int64_t>(kMaxSplits, keyTiles / kMinTilesPerSplit);
  if (maxSplits <= 1)
    return 1;
  auto efficiency = [&](int64_t n) {
    int64_t waves = (items * n + workers - 1) / workers;
    return double(items * n) / double(waves * workers);
  };
  double best = 0;
  for (int64_t n = 1; n <= maxSplits; ++n)
    best = std::max(best, efficiency(n));
  for (int64_t n = 1; n <= maxSplits; ++n)
    if (efficiency(n) >= 0.85 * best)
      return static_cast<unsigned>(n);
  return 1;
}

unsigned fmhajit::chooseNumSplits(const KernelSpec &spec, const AttentionProblem &problem,
                                  unsigned workers) {
  int64_t qTiles = (problem.maxSeqlenQ() + spec.bm - 1) / spec.bm;
  int64_t items = problem.batch * problem.headsQ * qTiles;
  int64_t keyTiles = (problem.maxSeqlenK() + spec.bn - 1) / spec.bn;
  return chooseNumSplits(items, keyTiles, workers);
}
