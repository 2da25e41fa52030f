//===- BackwardKernel.h - The flash-attention backward recipes ------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/Module.h"

namespace fmhajit {

/// Emits bwd_dot_do_o: per work item (b, h, query tile t), as the forward's
///   D[rows t*bm..] = rowSum(dO * O)        (fp32, into dPsum, LSE-shaped)
///   dQAccum[rows t*bm..] = 0               (if non-null, GPU targets)
void emitDotDoOKernel(const KernelSpec &spec, TargetInfo &target,
                      llvm::Module &m);

/// Emits bwd_dq_dk_dv. Scores are recomputed from Q, K and the forward's
/// LSE; every gradient element has exactly one writer, so no atomics and
/// no fp32 workspace, and results do not depend on thread timing. Two kinds
/// of work item (bwdKeyItems, ir/KernelAbi.h, counts the first kind):
///
/// Under head_items=1 (the host) there are head items only, one per
/// (b, K/V head hk), each the key items of every key tile of its head in
/// turn, whose steps also add into dQ's fp32 sums, which no other item
/// writes (dQ itself when fp32, else dQAccum):
///       sums_i = 0 for each query tile i of each query head of the group
///       for each key tile j, first to last: key item (b, hk, j) below,
///         each step also  sums_i += dS K_j   (load, mma, store: in order)
///       dQ_i = sums_i                      (from dQAccum: converted)
///
/// Where bwdKeyItemsAddDq (GPU targets unless deterministic=1) there are key
/// items only, and each step also adds dQ_i's share atomically:
///       dQAccum_i += dS K_j                (fp32; bwd_convert_dq finishes)
///
///   key item (b, K/V head hk, key tile j; under varlen j runs over the
///   longest sequence and an item past its own sequence's keys does nothing):
///                                                   dK_j = dV_j = 0
///     for each query head h of hk's group, each query tile i in the band:
///       S = Q_i K_j^T; softcap (keeping T = 1 - tanh^2); alibi; mask
///       P = exp2(S - LSE_i log2e)        (0 where LSE = -inf)
///       dV_j += P^T dO_i;  dP = dO_i V_j^T
///       (dropout=1: P * z in dV's product, z * dP; z = keep / (1 - p))
///       dS = scale * P * (dP - D_i) [* T]; dK_j += dS^T Q_i
///     store dK_j, dV_j
///   query item (b, h, query tile i), as a forward item:   dQ_i = 0 (fp32)
///     for each key tile j in the band: S, P, dP, dS as above; dQ_i += dS K_j
///     store dQ_i
void emitDqDkDvKernel(const KernelSpec &spec, TargetInfo &target,
                      llvm::Module &m);

/// Emits bwd_convert_dq: per work item (b, h, query tile t), as the forward's
///   dQ[rows t*bm..] = dQAccum[rows t*bm..]  (fp32 -> the out dtype)
void emitConvertDqKernel(const KernelSpec &spec, TargetInfo &target,
                         llvm::Module &m);

} // namespace fmhajit
