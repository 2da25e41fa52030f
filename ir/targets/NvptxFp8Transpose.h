//===- NvptxFp8Transpose.h - V to V^T in shared memory, for fp8 wgmma -----===//
//
// wgmma's 8-bit products read both operands K-major, so O += P V needs V^T
// ([dv][bn], keys contiguous) where TMA lands V as stored ([bn][dv]). Three
// warps of the producer warpgroup (the transposers) rewrite each V tile.
//
// The keys are permuted within each group of 16 on the way. P's A fragment
// of m16n8k32 gives lane (g, t) k slots 4t..4t+3 (and 16 + those), while
// S's accumulators give it columns 2t, 2t+1, 8+2t, 9+2t of each 16: if
// those four values are used as the four slots as they are, P's key order
// is pi(4t + i) = {2t, 2t+1, 2t+8, 2t+9}[i], so V^T's column 4t + i of each
// 16 must hold key pi(4t + i). Then no lane exchanges anything.
//
// The transposers move a unit of 16 keys by 32 columns with one
// ldmatrix.x4.trans, four byte permutes and one stmatrix.x4 (the 16-bit
// transpose moves byte pairs; the permutes split them), and ldmatrix.trans
// hands each lane exactly the keys pi puts in its word of V^T.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// Writes V^T (keys permuted as above) at \p dst, a tile shaped like
/// \p layout.values, from V at \p src, shaped like \p layout.stagedValues;
/// \p thread (i32) is this thread's index among the kTransposerThreads.
void emitFp8TransposeValues(llvm::IRBuilderBase &b, const WgmmaLayout &layout,
                            llvm::Value *src, llvm::Value *dst,
                            llvm::Value *thread);

} // namespace fmhajit
