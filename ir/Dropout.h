//===- Dropout.h - dropout=1: Philox keep-masks on tiles of probabilities -===//
//
// Dropout on P (docs/families.md#dropout): each probability is kept with
// probability 1 - p, else zeroed, and the kept ones are scaled by 1 / (1 - p)
// (the forward folds the scale into O's final 1 / l). The keep-mask is
// counter-based, a function of the element's logical position only:
//   key = (seed lo, seed hi); counter = (k >> 2, q, b * headsQ + h, offset)
//   r = Philox4x32-10(counter, key)[k & 3];  kept iff r >= threshold
// with b the sequence, h the query head, q and k positions inside the
// sequence (ScoreMods' coordinates), so every target, tile and varlen packing
// draws the same mask; runtime/numerics/Dropout.h is the reference's copy.
// Four neighbouring keys share a Philox call: where a thread holds adjacent
// columns of a row (the fragment layouts' pairs, the host's scalar
// columns), LLVM sees their counters are equal and computes it once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"
#include <array>

namespace fmhajit {

/// Philox4x32-10 on i32 scalars or vectors (all of one shape): ten rounds
///   hi0:lo0 = 0xD2511F53 * c0;  hi1:lo1 = 0xCD9E8D57 * c2   (i64 products)
///   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);  k += (0x9E3779B9,
///   0xBB67AE85)
std::array<llvm::Value *, 4> emitPhilox(llvm::IRBuilderBase &b,
                                        std::array<llvm::Value *, 4> counter,
                                        std::array<llvm::Value *, 2> key);

/// One work item's dropout: the run-time seed, offset and threshold, read
/// once where it is made (before the key loop).
class TileDropout {
public:
  TileDropout(llvm::IRBuilderBase &b, ArgsReader &p);

  /// Zeroes the dropped elements of \p probs, the tile of keys j0.. of
  /// \p item's query tile, and multiplies the kept ones by 1 / (1 - p) if
  /// \p scaleKept (else leaves them: the forward scales O once).
  ///   %keep = icmp uge (philox(counter(b, h, q, j0 + col)))[k & 3], %thr
  ///   x' = select %keep, x [* 1/(1-p)], 0.0
  void apply(TileOps &ops, Tile &probs, const WorkItem &item, llvm::Value *j0,
             bool scaleKept);

private:
  /// Whether element (row, col) of the tile of keys j0.. is kept (i1,
  /// shaped like row and col); \p plane is b * headsQ + h of the item's
  /// (first) head.
  llvm::Value *keeps(llvm::IRBuilderBase &b, const WorkItem &item,
                     llvm::Value *plane, llvm::Value *row, llvm::Value *col,
                     llvm::Value *j0);

  llvm::IRBuilderBase &b;
  llvm::Value *seedLo, *seedHi, *offset, *threshold, *headsQ; ///< i32
  llvm::Value *scale; ///< 1 / (1 - p), float
};

} // namespace fmhajit
