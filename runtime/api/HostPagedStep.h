//===- HostPagedStep.h - A plan's paged-attention launches on the host ----===//
//
// fwd_paged, then splitkv_combine when the plan cuts key ranges, as one
// runner (SplitKv.h's HostSplitKv runs the combine only for numSplits > 1).
// The block table and the lengths are the caller's memory, read by the
// kernel at run time, so a plan serves a cache that grows between calls.
// A wrong page index or a length past the pages would read outside the
// pools, so run() checks them first: batch x maxPagesPerSeq int32 reads,
// small next to the attention they guard.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/HostSplitStep.h"
#include "runtime/numerics/KvCache.h"
#include <vector>

namespace fmhajit {

class HostPagedStep : public StepRunner {
public:
  HostPagedStep(HostSplitKv kernels, HostBinding binding,
                SplitWorkspaceLayout workspace,
                std::shared_ptr<HostExecutor> executor, KvCacheLayout cache,
                std::vector<int32_t> seqlensK)
      : kernels(std::move(kernels)), binding(std::move(binding)),
        workspace(workspace), executor(std::move(executor)), cache(cache),
        seqlensK(std::move(seqlensK)) {}

  llvm::Error run(const api::Tensors &tensors) const override;

private:
  /// Refuses lengths outside [1, maxPagesPerSeq * pageSize] and page
  /// indices in use outside [0, numPages).
  llvm::Error checkCache(const int32_t *blockTable,
                         const int32_t *lengths) const;

  HostSplitKv kernels;
  HostBinding binding; ///< numSplits set; pages, lengths, partials not yet
  SplitWorkspaceLayout workspace;
  std::shared_ptr<HostExecutor> executor;
  KvCacheLayout cache;
  std::vector<int32_t>
      seqlensK; ///< the problem's, for a null Tensors::seqlensK
};

} // namespace fmhajit
