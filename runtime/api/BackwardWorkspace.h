//===- BackwardWorkspace.h - Where a backward plan keeps D and dQ's sums --===//
//
// A backward plan's workspace holds D = rowsum(dO * O) (one float per LSE
// element), then, where bwd_dq_dk_dv sums dQ in fp32 rows of its own
// (bwdSumsDqInWorkspace, ir/KernelAbi.h: a GPU's atomic key items, or the
// host's head items with a dQ that is not fp32), those rows, packed
// [batch, seqlenQ, headsQ, d] (or THD under varlen). The host and GPU
// steps bind the same layout.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "runtime/numerics/AttentionProblem.h"

namespace fmhajit {

/// Where D and the dQ accumulator sit in a backward's workspace.
struct BackwardWorkspace {
  int64_t dsumBytes = 0;   ///< D: one float per LSE element
  int64_t dqOffset = 0;    ///< the fp32 dQ accumulator, 256-byte aligned
  int64_t dqBytes = 0;     ///< 0 when dQ has one writer (no accumulator)
  TensorStrides dqStrides; ///< packed [batch, seqlenQ, headsQ, d] (or THD)

  /// For \p problem and its bwd_dq_dk_dv spec \p grad.
  static BackwardWorkspace of(const AttentionProblem &problem,
                              const KernelSpec &grad);
  /// What a GPU plan asks for: the accumulator's offset, aligned, even
  /// when it is empty.
  int64_t bytes() const { return dqOffset + dqBytes; }
  /// What a host plan asks for: D alone when there is no accumulator.
  int64_t hostBytes() const { return dqBytes ? bytes() : dsumBytes; }
  /// KernelArgs' dPsum, dQAccum (null when dqBytes is 0) and dQAccumStrides
  /// in the workspace at \p base.
  void bind(KernelArgs &p, void *base) const;
};

} // namespace fmhajit
