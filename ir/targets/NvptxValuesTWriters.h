//===- NvptxValuesTWriters.h - fp8's V^T written by the kernel itself -----===//
//
// A v_pretranspose kernel reads V^T ([dv][keys], keys permuted within each
// 16 as NvptxFp8Transpose.h says) by TMA from the workspace. By default a
// pass writes it before the kernel (NvptxValuePretranspose.h): about 24 µs
// at 16k tokens, the memory's full speed, while the kernel after it is
// bound by its tensor cores and leaves the memory nearly idle. Under
// EmitOptions::valuesTInKernel the kernel writes V^T itself, in the three
// warps of its producer warpgroup that only the fp8 transposers used, so
// the writing overlaps the products.
//
// The unit is one key tile: bn keys of one (sequence, K/V head), the box the
// TMA warp loads. Tile t = pair * tilesPerPair + j has a 32-bit flag in the
// workspace after V^T, and a counter after the flags hands tiles out
// (KernelAbi.h, valuesTFlagWords; the launch zeroes both). The 96 writers
// of a block loop:
//   1. thread 0 claims the next tile (atom.add on the counter) and hands
//      its number to the others in shared memory (bar.sync 8, 96); past the
//      last tile, they stop;
//   2. each copies its share of the tile's V rows with cp.async into a
//      staging tile swizzled as TMA would land it, zeros past seqlenK;
//   3. they transpose it in shared memory as the fp8 transposers do
//      (emitFp8TransposeValues);
//   4. each stores its share of V^T's rows (16 bytes at a time, not past a
//      row's padded length) to the workspace, then fences at the device's
//      scope;
//   5. they meet, and thread 0 sets the tile's flag (st.release.gpu).
// The TMA warp waits for a tile's flag (ld.acquire.gpu, then
// fence.proxy.async.global) before it loads the tile (NvptxTmaProducer.cpp).
//
// No block waits on one that is not running: only a running block's
// writers claim a tile, and they finish it waiting on nothing but each
// other; a tile no one has claimed yet is one a block's own writers will
// claim before they stop. Tiles are handed out in the order the blocks
// need them: pairs from the last to the first, as the blocks walk their
// items (PersistentSchedule.h: item total - 1 first), in groups of the
// pairs one round of the grid reads, and within a group tile by tile across
// its pairs, so that every block of a round finds its next tile among the
// next claimed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/targets/GpuTarget.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// Where a kernel that writes its own V^T keeps the tiles' flags (i32
/// pointer, generic) and how many key tiles each (sequence, K/V head) has
/// (i32), read from the kernel's parameters \p params.
struct ValuesTFlags {
  llvm::Value *flags, *tilesPerPair;

  static ValuesTFlags read(llvm::IRBuilderBase &b, const KernelSpec &spec,
                           llvm::Value *params);
  /// The flag of key tile \p tile (i32) of \p pair (i32).
  llvm::Value *flag(llvm::IRBuilderBase &b, llvm::Value *pair,
                    llvm::Value *tile) const;
};

/// The writers' loop above, for the calling thread (one of the producer
/// warpgroup's threads 32..127), from kernel parameters \p params.
void emitValuesTWriters(llvm::IRBuilderBase &b, GpuTargetInfo &target,
                        llvm::Value *params);

} // namespace fmhajit
