//===- SplitKv.h - Split-KV attention: workspace, parameters, host runs ---===//
//
// A split-KV call runs two kernels (docs/families.md):
//   1. fwd_splitkv (or fwd_paged) with numSplits > 1: each (b, h, query
//      tile) is numSplits work items, each over one part of the key range,
//      writing fp32 partial O (divided by its own sum) and partial LSE to
//      the workspace;
//   2. splitkv_combine: merges the parts into O (and LSE with lse=1).
// With numSplits = 1 the split kernel writes O and LSE itself and no
// combine runs. Both kernels take the same KernelArgs, except numQTiles,
// which follows each kernel's bm.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "ir/KernelAbi.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

class HostExecutor;

/// The two fp32 workspace buffers of a split-KV call.
struct SplitKvWorkspace {
  float *oAccum = nullptr;   ///< [numSplits, rows, dv]
  float *lseAccum = nullptr; ///< [numSplits, rows]
};

/// Floats in each workspace buffer, for rows = batch * headsQ * seqlenQ
/// (headsQ * totalQ under varlen) query rows.
struct SplitKvWorkspaceSize {
  int64_t oAccum = 0, lseAccum = 0;
};

/// Where the partials go in a plan's workspace.
struct SplitWorkspaceLayout {
  int64_t oAccumOffset = 0, lseAccumOffset = 0; ///< bytes from the start
  int64_t bytes = 0;                            ///< the whole workspace
};

/// The partials' pointers in the workspace at \p base.
SplitKvWorkspace splitWorkspaceAt(void *base,
                                  const SplitWorkspaceLayout &layout);

/// The workspace \p numSplits parts of \p problem need (zero for one part).
SplitKvWorkspaceSize splitKvWorkspaceSize(const KernelSpec &spec,
                                          const AttentionProblem &problem,
                                          unsigned numSplits);

/// The workspace of a call under a split schedule of \p parts parts
/// (KernelArgs::splitSchedule): each part holds its own sequence's rows,
/// headsQ * seqlenQ of them (seqlenQ: the longest under varlen).
SplitKvWorkspaceSize scheduledWorkspaceSize(const KernelSpec &spec,
                                            const AttentionProblem &problem,
                                            int64_t parts);

/// The splitkv_combine spec that finishes \p split (fwd_splitkv or
/// fwd_paged): same dtype, out, d, dv, lse, varlen and target, resolved.
llvm::Expected<KernelSpec> combineSpecFor(const KernelSpec &split);

/// Sets \p params' split fields: numSplits and the workspace.
void setSplits(KernelArgs &params, unsigned numSplits,
               const SplitKvWorkspace &workspace);

/// KernelArgs of a fwd_splitkv call: makeKernelArgs plus setSplits.
KernelArgs makeSplitKvParams(const KernelSpec &spec,
                             const AttentionProblem &problem,
                             const ForwardBuffers &buffers, unsigned numSplits,
                             const SplitKvWorkspace &workspace);

/// The combine's KernelArgs: \p split's, with numQTiles for the combine's bm.
KernelArgs makeCombineParams(const KernelSpec &combine,
                             const KernelArgs &split);

/// Split-KV on the host: a split kernel (fwd_splitkv or fwd_paged) and the
/// combine that finishes it, both loaded through the cache.
class HostSplitKv {
public:
  static llvm::Expected<HostSplitKv> load(const KernelSpec &split,
                                          KernelCache &cache);

  const HostKernel &splitKernel() const { return split; }
  const HostKernel &combineKernel() const { return combine; }

  /// Runs the split kernel on \p params and, when params.numSplits > 1, the
  /// combine; returns when O (and LSE) are written.
  void run(const KernelArgs &params, HostExecutor &executor) const;

private:
  HostSplitKv(HostKernel split, HostKernel combine)
      : split(std::move(split)), combine(std::move(combine)) {}

  HostKernel split, combine;
};

} // namespace fmhajit
