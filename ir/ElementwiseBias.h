//===- ElementwiseBias.h - bias=elementwise on a tile of scores -----------===//
//
// An additive bias on the scores, like FlashAttention's and PyTorch's float
// attn_mask: s_ij += bias[b, h, i, j], fp32, logically [batch, headsQ,
// seqlenQ, seqlenK] at the caller's element strides (KernelArgs::bias,
// biasStrides, biasKeyStride; 0 broadcasts). ScoreMods applies it after the
// soft-cap and before the variant's score_mod and the mask
// (docs/families.md#elementwise-bias-biaselementwise).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbiIR.h"
#include "ir/TargetInfo.h"
#include "ir/TileOps.h"
#include "ir/WorkItem.h"

namespace fmhajit {

/// Adds bias * log2e (scores are in log2 units) to the scores of keys j0..
/// of \p item's query tile. Each row's address is loop-invariant: its query
/// clamped to the sequence's last (rows past it are never stored) and its
/// head (under pack_gqa each row's own). Each tile's keys are clamped to
/// sk - 1 (keys past it are masked), so nothing outside the bias is read.
/// The tile's row base and the key stride go through
/// TargetInfo::opaqueBase once per tile: otherwise LICM hoists each score's
/// column offset out of the key loop, one 64-bit register per score (the
/// sm_90a kernels spilled).
///   %row  = gep float, %bias, b*batch + min(q, sq-1)*row + h*head (per row)
///   %tile = opaque(gep %row, j0*key);  %key = opaque(key)         (per tile)
///   %at   = gep float, %tile, min(col, sk-1-j0) * %key
///   s' = s + load(%at) * log2e          (a gather where lanes are rows)
void addElementwiseBias(llvm::IRBuilderBase &b, ArgsReader &p,
                        TargetInfo &target, TileOps &ops, Tile &scores,
                        const WorkItem &item, llvm::Value *j0);

} // namespace fmhajit
