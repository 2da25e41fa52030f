//===- BackwardSchedule.h - Which work items the host backward runs -------===//
//
// bwd_dq_dk_dv has two schedules on the host (docs/design.md, "The backward
// (host)"), both deterministic:
// - key and query items (head_items=0): one item per key tile of a
//   (sequence, K/V head) and one per query tile; fine items that balance
//   any thread count, but the query items recompute S, P, dP and dS: 7
//   products per (query tile, key tile) pair;
// - head items (head_items=1): one item per (sequence, K/V head), which
//   adds dQ as it goes: 5 products a pair, but only batch * headsKv items.
// The plan takes head items where they finish no later than the split
// would: the executor hands items out from the last, each to the first
// free thread, so their time is that list schedule's longest thread, with
// an item's work taken as its sequence's Sq * Sk; the split's is the total
// work times kHostSplitCost, spread evenly over the threads. One thread
// always takes head items; B * Hkv = T equal heads do, T + 1 do not.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "llvm/ADT/ArrayRef.h"

namespace fmhajit {

/// The split's time over head items' for the same work: 7 products over 5,
/// less what both schedules do alike (the loads, dQ's sums). Measured on the
/// development machine (d=128, S=1024 and 2048, H=4 and 16, fp32 and bf16,
/// causal and not; docs/results.md): 1.32-1.65 on one thread, 1.27-1.38 on
/// two. The rule takes the low end: coarse items suffer more from a thread
/// that runs late.
inline constexpr double kHostSplitCost = 1.25;

/// Whether the host backward of \p problem on \p threads threads (at least
/// 1) takes head items.
bool hostBackwardTakesHeadItems(const AttentionProblem &problem,
                                unsigned threads);

/// The rule on raw work: \p headWork[w], the work of head item w, on
/// \p threads threads.
bool headItemsKeepUp(llvm::ArrayRef<double> headWork, unsigned threads);

} // namespace fmhajit
