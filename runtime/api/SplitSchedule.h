//===- SplitSchedule.h - Split-KV parts per sequence for mixed lengths ----===//
//
// A batch of sequences with different key lengths (varlen cu_seqlens_k, or
// a paged cache's per-sequence lengths) cut into numSplits parts each is
// paced by its longest sequence: every sequence gets the same number of
// parts, so the longest one's parts are the longest items, and a batch
// that fills the GPU is not cut at all. A split schedule instead cuts every
// sequence into parts of about the same size, `splitTiles` key tiles each
// (a sequence's last part takes the rest), so a sequence gets parts in
// proportion to its length and all work items cost about the same:
//
//   parts of sequence b = max(1, ceil(keyTiles_b / splitTiles))
//   splitTiles = max(ceil(work * items / (partsPerWorker * workers)),
//                    ceil(longest / most parts), fewest tiles)
//   work = sum of keyTiles_b; items = the work items of one part (item
//   heads x query tiles), each a GPU block or a host thread's claim;
//   GPU: 4 items per SM, at most kGpuMaxSplits parts, 2 tiles at least;
//   host: 32 items per thread, kMaxSplits, kHostScheduleMinPartKeys.
// These constants are the uniform rule's (SplitHeuristic.h) carried over,
// not yet measured for mixed batches (bench/decode's mixed rows time them).
//
// The parts form one list, KernelArgs::splitSchedule (ir/WorkItem.h), in
// ascending order of size: GPU blocks and host threads both take the last
// items first, so the largest parts start first and the short remainders
// fill in at the end (longest processing time first). The combine finds a
// sequence's parts through the list's per-sequence first slots, whatever
// their count. With one part for every sequence there is no schedule.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <optional>
#include <vector>

namespace fmhajit {

/// GPU: parts to aim for per multiprocessor (work items of about one part's
/// cost; the hardware starts a block wherever one finishes).
inline constexpr int64_t kGpuSchedulePartsPerSm = 4;
/// Host: parts to aim for per thread, as chooseHostNumSplits aims items.
inline constexpr int64_t kHostSchedulePartsPerWorker = 32;
/// Host: fewest keys a part may get (kHostMinKeysPerSplit's role).
inline constexpr int64_t kHostScheduleMinPartKeys = 1024;
/// GPU: fewest key tiles a part may get.
inline constexpr int64_t kGpuScheduleMinPartTiles = 2;

/// The schedule of one call: KernelArgs::splitSchedule's entries,
/// numSplits (parts) and splitTiles.
struct SplitSchedule {
  /// [parts, 4] {sequence, index among its parts, its parts, slot}, then
  /// [batch + 1] each sequence's first slot.
  std::vector<int32_t> entries;
  int32_t parts = 0;
  int32_t splitTiles = 0;
  int32_t mostParts = 0; ///< the most parts of one sequence
};

/// The schedule cutting sequences of \p keyTiles key tiles each into parts
/// of \p splitTiles tiles (a sequence of no tiles gets one empty part).
SplitSchedule makeSplitSchedule(llvm::ArrayRef<int64_t> keyTiles,
                                int64_t splitTiles);

/// splitTiles for sequences of \p keyTiles key tiles (tiles of \p bn keys),
/// each part \p items work items, on \p workers host threads or
/// multiprocessors (the rule above, by \p backend).
int64_t chooseSplitTiles(llvm::ArrayRef<int64_t> keyTiles, int64_t bn,
                         int64_t items, unsigned workers, Backend backend);

/// The schedule a plan uses for sequences of \p keys keys each with
/// \p bn-key tiles and \p items work items per part, or none: fewer than two
/// sequences, lengths all equal (numSplits cuts those evenly), no workers
/// known, or one part for every sequence.
std::optional<SplitSchedule> planSplitSchedule(llvm::ArrayRef<int64_t> keys,
                                               int64_t bn, int64_t items,
                                               unsigned workers,
                                               Backend backend);

} // namespace fmhajit
