//===- ForwardKernel.h - The flash-attention forward recipe ---------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/Module.h"

namespace fmhajit {

/// Emits the forward kernel of \p spec (family fwd) into \p m as a function
/// named after the spec's encoded name:
///
///   for each work item (batch b, head h, query tile t):
///     Q = load(rows t*bm.., scaled by scale*log2e)   m = -inf, l = 0, O = 0
///     for each key tile j in the mask's range:
///       S = Q K_j^T; softcap; alibi; mask (edge tiles only)
///       m' = max(m, rowMax(S)); P = exp2(S - m'); a = exp2(m - m')
///       l = a*l + rowSum(P); O = a*O + P V_j; m = m'
///     O /= l (0 where l = 0); store O; lse = (m + log2 l) ln 2
///
/// Families fwd_splitkv and fwd_paged (numSplits = max(1, params.numSplits)):
///   work item = split * (items of one pass) + (b, h, t); the key range [lo,
///   hi) of the tile is cut into numSplits runs of whole bn-tiles and the item
///   loops over its run only (an empty run leaves m = -inf, l = 0). With
///   numSplits > 1 it stores O/l and lse (fp32, natural log) to oAccum and
///   lseAccum at row split * plane + lse row; with numSplits = 1 it stores
///   O and LSE as fwd does. Under a split schedule (splitSchedule set, batches
///   of mixed lengths) the item's {b, split, parts, slot} come from the
///   schedule's entry, a part runs splitTiles tiles, a sequence's last part
///   runs to its end, partials go to row (slot * headsQ + h) * seqlenQ + i,
///   and a sequence of one part stores O directly (ir/WorkItem.h).
///   fwd_paged reads sk from cacheSeqlens[b] and K/V
///   row j from page blockTable[b][j >> log2PageSize], row j & (P - 1).
///
/// Under pack_gqa the items run over (b, K/V head hk, t) and a tile's row R
/// (counted over the item's sq * group rows) is token R / group of query
/// head hk * group + R % group: Q, O, LSE and partial rows are found per
/// row, the mask and ALiBi use the row's token and head, and the tile's key
/// range runs from its first row's token to its last's.
void emitForwardKernel(const KernelSpec &spec, TargetInfo &target,
                       llvm::Module &m);

} // namespace fmhajit
