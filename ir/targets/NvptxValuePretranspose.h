//===- NvptxValuePretranspose.h - V^T written once a call, for fp8 wgmma --===//
//
// wgmma's 8-bit products read V K-major, as V^T ([dv][keys], keys
// contiguous). Without v_pretranspose the producer warpgroup rewrites each
// V tile in shared memory, once per query tile that reads it
// (NvptxFp8Transpose.h). With it, a pass before the kernel writes V^T into
// the workspace once per call, and the kernel's TMA ring loads V^T tiles as
// it loads K.
//
// The pass writes V^T's keys in the order the products read them: within
// each group of 16, position 4t + i holds key pi(4t + i) =
// {2t, 2t+1, 2t+8, 2t+9}[i], as the transposers would (so P's accumulators
// are the A fragments as they are). Each row holds pretransposedKeys(seqlenK)
// keys; the ones past seqlenK are zeros.
//
// One block of 256 threads takes 64 keys of one (sequence, K/V head):
//  1. each thread reads 4 keys x 4 columns (four 4-byte loads; a warp's
//     load covers 32 contiguous bytes of each of 4 keys), transposes the
//     16 bytes with byte permutes, and stores 4 words of V^T rows into
//     shared memory, whose rows are 68 bytes apart so that a warp's 32
//     stores hit 32 banks;
//  2. the block then copies the dv rows of 64 bytes out, 16 threads a row.
// The kernel is the forward kernel's sibling in its module, named
// pretransposeSymbol(kernel name).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/targets/GpuTarget.h"
#include "llvm/IR/Module.h"

namespace fmhajit {

/// Adds the pass's kernel for \p target's spec (v_pretranspose=1) to \p m.
void emitValuePretransposeKernel(GpuTargetInfo &target, llvm::Module &m);

} // namespace fmhajit
