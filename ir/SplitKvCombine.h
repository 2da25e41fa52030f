//===- SplitKvCombine.h - Merging split-KV partial results ----------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/Module.h"

namespace fmhajit {

/// Emits the splitkv_combine kernel of \p spec into \p m, named after the
/// spec's encoded name. It takes the KernelArgs of the split-KV call it
/// finishes (oAccum, lseAccum, numSplits; O, LSE and their layout):
///
///   for each work item (b, h, query tile t), each row i of the tile:
///     r_s = s * plane + lseRow(i) for s < n = max(1, numSplits); under a
///     split schedule r_s = (first_b + s) * headsQ * seqlenQ + (h * seqlenQ +
///     i) for s < n = parts of sequence b (combinedPartials, WorkItem.h), and
///     nothing for a sequence of one part (its split item wrote O)
///     each group g of CombineShape(dv, threads) folds s = g, g + groups, ...
///       (4 a step, the step's loads first; its threads own `width`
///       adjacent columns c each):
///       m' = max(m, lse_s); a = exp(m - m'); w_s = exp(lse_s - m')
///       sum = sum * a + w_s; row[c] = row[c] * a + w_s * oAccum[r_s*dv + c]
///       (m' read as 0 while it is -inf, so no -inf - -inf)
///     groups > 1: each group's (m, sum, row) to shared memory, a barrier,
///       group 0 merges them the same way; a barrier before the next row
///     group 0: O[i][c] = narrow(row[c] / sum)   ; 0 when sum = 0
///              LSE[i] = m + ln(sum)              ; -inf when sum = 0,
///                                                ; lse=1 only, column 0
///
/// exp and ln are the target's exp2/log2 with log2e/ln2. On the host one
/// thread is one group and the row one <dv x float> vector.
void emitSplitKvCombineKernel(const KernelSpec &spec, TargetInfo &target,
                              llvm::Module &m);

} // namespace fmhajit
