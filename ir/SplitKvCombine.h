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
///     r_s = s * plane + lseRow(i) for s < n = max(1, numSplits)
///     mx = max_s lseAccum[r_s]
///     lse = mx + ln(sum_s exp(lseAccum[r_s] - mx)), or -inf if mx = -inf
///     for each column c this thread owns (every column on the host):
///       acc = sum_s exp(lseAccum[r_s] - lse) * oAccum[r_s * dv + c]
///             ; 8 parts a step, a step's loads before its fmuladds,
///             ; then the last n % 8 parts one at a time
///       O[i][c] = narrow(acc)            ; 0 when lse = -inf
///     LSE[i] = lse                       ; lse=1 only, thread 0
///
/// exp and ln are the target's exp2/log2 with log2e/ln2. The column loop
/// has a constant trip count on the host, so LLVM vectorizes it.
void emitSplitKvCombineKernel(const KernelSpec &spec, TargetInfo &target,
                              llvm::Module &m);

} // namespace fmhajit
