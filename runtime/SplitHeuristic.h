//===- SplitHeuristic.h - How many parts to cut a key range into ----------===//
//
// The rule (FlashAttention's num_splits_heuristic, with a floor on the keys
// per part), from the problem and the machine only:
//   items = batch * headsQ * ceil(seqlenQ / bm): the work items of one pass
//   if items >= 0.8 * workers: 1 (every worker is busy already)
//   parts may not drop below kMinTilesPerSplit key tiles of bn keys each:
//     maxSplits = min(kMaxSplits, ceil(seqlenK / bn) / kMinTilesPerSplit)
//   efficiency(n) = items * n / (ceil(items * n / workers) * workers)
//   choose the smallest n <= maxSplits with efficiency(n) >= 0.85 * the
//   best efficiency of any n <= maxSplits
// Workers are host threads (HostExecutor::threads()) or GPU multiprocessors.
// bench/decode measures the rule against every split count in one run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/AttentionProblem.h"
#include "specs/KernelSpec.h"

namespace fmhajit {

/// Fewest key tiles a part may get: below it the fixed cost of a part (its
/// Q tile, partial writes, its share of the combine) outweighs the gain.
inline constexpr unsigned kMinTilesPerSplit = 4;
/// Most parts the rule chooses.
inline constexpr unsigned kMaxSplits = 64;

/// The split count for \p problem (seqlenK: the longest key sequence) run
/// with \p spec's tiles on \p workers parallel workers; 1 means no split.
unsigned chooseNumSplits(const KernelSpec &spec, const AttentionProblem &problem,
                         unsigned workers);

/// The same rule on the raw counts: \p items work items of one pass over
/// \p keyTiles key tiles each.
unsigned chooseNumSplits(int64_t items, int64_t keyTiles, unsigned workers);

} // namespace fmhajit
