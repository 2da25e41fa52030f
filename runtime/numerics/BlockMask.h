//===- BlockMask.h - Which (query tile, key tile) blocks a mask hides -----===//
//
// Block sparsity (docs/variants.md#block-sparsity), FlexAttention's
// BlockMask for fmhajit's tiles: for one problem's shapes, each block of bm
// query rows by bn keys is
//   Hidden   no key of it is visible to any query row of it (the spec's
//            mask AND mask_mod, over the sequence's real rows and keys): the
//            kernel never loads it;
//   Full     mask_mod is true on every real element: the kernel skips
//            mask_mod there (the spec's own mask and the end of the keys
//            still apply, by the kernel's cheap tile tests);
//   Partial  the rest: mask_mod per element, as without a map.
// Only elements inside the sequence (i < sq, j < sk) count: rows and keys
// past the end are never stored or are masked by the kernel's bound.
//
// The map the kernel reads (ir/KernelArgs.def: blockMap) lists, per query
// tile, the tiles that are not hidden, ascending, each as (tile << 1 | full),
// after their count. It is pure host logic over a mask callback, so the
// unit tests check it without a compiler.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <cstdint>
#include <functional>
#include <vector>

namespace fmhajit {

enum class BlockKind { Hidden, Partial, Full };

/// mask_mod(b, h, q, k) as the host evaluates it.
using MaskModFn = std::function<bool(int b, int h, int q, int k)>;

/// The kind of the block of query rows [q0, q0 + bm) and keys [k0, k0 + bn)
/// of sequence \p b (lengths \p sq, \p sk) and query head \p h, under
/// \p spec's mask with \p problem's window, and \p maskMod.
BlockKind classifyBlock(const KernelSpec &spec, const AttentionProblem &problem,
                        const MaskModFn &maskMod, int64_t b, int64_t h,
                        int64_t q0, int64_t k0, int64_t sq, int64_t sk);

/// One problem's block map, in the layout of KernelArgs::blockMap.
struct BlockMap {
  std::vector<int32_t> entries;
  /// int32 elements between sequences, query tiles and query heads; a
  /// stride of 0 shares the map (mask_mod does not read b, or h).
  int64_t batchStride = 0, tileStride = 0, headStride = 0;
  int64_t queryTiles = 0, keyTiles = 0;
  int64_t hidden = 0, partial = 0, full = 0; ///< blocks of each kind
};

/// Which of mask_mod's (b, h) the map must tell apart.
struct BlockMapDependence {
  bool batch = true, head = true;
};

/// The map of \p spec's tiles (bm x bn) over \p problem. Varlen sequences
/// always get a map each (their lengths differ); otherwise one per sequence
/// or head only where \p depends says mask_mod reads b or h.
BlockMap buildBlockMap(const KernelSpec &spec, const AttentionProblem &problem,
                       const MaskModFn &maskMod, BlockMapDependence depends);

} // namespace fmhajit
