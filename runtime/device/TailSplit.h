//===- TailSplit.h - How a launch cuts its last round's items by keys -----===//
//
// A walking kernel whose items cost the same (splitsTail) runs N items on G
// blocks in ceil(N / G) rounds, the last holding r = N - (ceil(N / G) - 1) G
// of them while the other blocks idle. Cutting each of those r items' keys
// into p parts turns the last round into ceil(r p / G) rounds of 1/p the
// length (WorkItem.h), at the cost of each part's start, its partials and
// the last part's fold (ir/ForwardTail.cpp). The launch chooses p, since it
// depends on the grid and the problem, not the kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "specs/KernelSpec.h"
#include <cstdint>

namespace fmhajit {

/// KernelArgs::tailParts and tailItems: no split by default.
struct TailSplit {
  int32_t parts = 1; ///< each tail item's parts; 1: none
  int32_t items = 0; ///< the last round's items, which are split
  bool splits() const { return parts > 1 && items > 0; }
};

/// The most parts an item is cut into, and the fewest key tiles a part
/// holds. A part's start and its partials cost about kTailPartCostTiles key
/// tiles, and the last part's fold about kTailFoldCostTiles for each other
/// part (its rows' partials read from L2).
inline constexpr int32_t kMaxTailParts = 8;
inline constexpr int64_t kMinTilesPerTailPart = 4;
inline constexpr double kTailPartCostTiles = 2;
inline constexpr double kTailFoldCostTiles = 2;

/// The split that ends \p items items of \p keyTiles key tiles each soonest
/// on \p grid blocks that run at once, or none where the last round is full
/// or the best split saves less than 1% of the call (rounds and parts
/// counted as above). \p forcedParts > 0 (FMHAJIT_TAIL_PARTS, a knob for
/// tests and measurement) takes that many parts, capped by the key tiles; 1
/// turns the split off.
TailSplit chooseTailSplit(int64_t items, int64_t keyTiles, int64_t grid,
                          int32_t forcedParts = 0);

/// chooseTailSplit for \p spec's kernel with \p items work items (before
/// the split) over \p seqlenK keys on \p grid multiprocessors; none for a
/// kernel that does not splitsTail. Reads FMHAJIT_TAIL_PARTS.
TailSplit chooseTailSplit(const KernelSpec &spec, int64_t items,
                          int64_t seqlenK, int64_t grid);

/// Bytes of workspace \p split needs: the counters, then the partial LSEs,
/// then the partial outputs, each on a 256-byte boundary; 0 without a
/// split.
int64_t tailWorkspaceBytes(const KernelSpec &spec, TailSplit split);

/// Sets \p params' tail fields for \p split, pointing the counters and the
/// partials (KernelArgs::oAccum, lseAccum) into \p workspace
/// (tailWorkspaceBytes bytes).
void setTailSplit(KernelArgs &params, const KernelSpec &spec, TailSplit split,
                  void *workspace);

} // namespace fmhajit
