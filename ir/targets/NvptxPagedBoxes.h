//===- NvptxPagedBoxes.h - A paged cache's K/V tiles in TMA boxes --------===//
//
// fwd_paged on the TMA ring (loadsPagedBoxes): the K and V maps view each
// pool as pages of rows (runtime/device/TensorMapBoxes.h), so a tile of bn
// keys is bn / R boxes per slab, R = gcd(page size, bn). A tile starts on a
// multiple of bn (ScoreMods::keyRange), so no box crosses a page. The
// producer warp's lane k owns box k: it looks the box's page up in the
// block table and issues its slabs, so the lookups and the issues of a tile
// run side by side rather than one after another.
//
// Keys past the sequence's end: a box wholly past it names page numPages,
// past the pool, and TMA fills it with zeros; a box the end falls in loads
// its page's unused rows, which may hold anything (NaN in a fresh
// allocation). The scores mask those keys, but P = 0 times a NaN of V is
// NaN: so the producer lands a partial V tile on its own tail barrier,
// zeroes its rows past the end, and only then marks the slot full. Under
// fp8 V lands in the transposers' staging tile, and the transposers zero
// those rows themselves before they read it (NvptxTmaProducer.cpp): writers
// and readers then meet at one named barrier.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/TileOps.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// Lane \p lane's page: the block table's entry for box \p lane of the tile
/// at \p box.row, or numPages where the box starts at or past \p valid (the
/// tile's keys) or the lane owns no box.
///   %first = row + (lane << log2R); %in = (lane << log2R) < valid
///   %page = load table[%in ? %first >> log2P : 0]; select %in, %page, numPages
llvm::Value *lookUpBoxPage(llvm::IRBuilderBase &b, const TensorBox &box,
                           unsigned bn, llvm::Value *valid, llvm::Value *lane);

/// Issues the tile's boxes into \p dst (slabs of \p shape), completing on
/// \p bar: lane 0 arms \p bar with the whole tile's bytes, then lane k
/// issues box k's slabs at page \p page (its lookUpBoxPage).
///   @lane 0: mbarrier.arrive.expect_tx [bar], bytes; bar.warp.sync
///   @k < bn/R: cp.async.bulk.tensor.4d [dst + slab + k R W], [map, {c,
///              (row + k R) & (P - 1), head, page}], [bar]   (each slab)
void issuePagedBoxes(llvm::IRBuilderBase &b, const WgmmaLayout &layout,
                     const SharedTile &shape, const TensorBox &box,
                     llvm::Value *map, llvm::Value *dst, llvm::Value *bar,
                     llvm::Value *page, llvm::Value *lane);

/// Zeroes rows \p valid.. of every slab of the tile of \p shape at \p dst,
/// 16 bytes a thread at a time, thread \p thread of \p threads:
///   st.shared.v4.b32 [...], {0, 0, 0, 0}  (thread, thread + threads, ...)
/// The caller makes the zeros visible to the tile's readers.
void zeroRowsPast(llvm::IRBuilderBase &b, const WgmmaLayout &layout,
                  const SharedTile &shape, llvm::Value *dst, llvm::Value *valid,
                  llvm::Value *thread, unsigned threads);

} // namespace fmhajit
