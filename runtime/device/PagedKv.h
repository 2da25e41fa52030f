//===- PagedKv.h - Parameters of calls on a (paged) K/V cache -------------===//
//
// The C++ entries of fwd_paged and append_kv: KernelArgs for a validated
// PagedProblem / AppendKvProblem (runtime/numerics/KvCache.h) and the buffers
// of one call. Run them with HostKernel::run (append_kv, or fwd_paged with one
// part) or HostSplitKv::run (fwd_paged with numSplits > 1); see
// docs/families.md for the fields each family reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "runtime/device/HostKernel.h"
#include "runtime/device/SplitKv.h"
#include "runtime/numerics/KvCache.h"
#include "specs/KernelSpec.h"

namespace fmhajit {

/// A K/V cache in memory: contiguous [batch, capacity, headsKv, dim], or
/// paged pools [numPages, pageSize, headsKv, dim] with a block table.
struct KvCacheBuffers {
  void *k = nullptr, *v = nullptr;     ///< in the spec's dtype
  const int32_t *blockTable = nullptr; ///< paged: [batch, maxPagesPerSeq]
  const int32_t *seqlens = nullptr;    ///< [batch] rows in use (append_kv:
                                       ///< before the append)
};

/// KernelArgs of a fwd_paged call: Q, O, LSE and ALiBi slopes from \p query
/// (its k and v are not read), keys from \p cache, and \p numSplits parts
/// per query tile (workspace needed when numSplits > 1).
KernelArgs makePagedParams(const KernelSpec &spec, const PagedProblem &problem,
                           const ForwardBuffers &query,
                           const KvCacheBuffers &cache, unsigned numSplits = 1,
                           const SplitKvWorkspace &workspace = {});

/// The buffers of one append_kv call.
struct AppendKvBuffers {
  const void *kNew = nullptr,
             *vNew = nullptr; ///< [batch, newTokens, headsKv, d|dv]
  KvCacheBuffers cache;       ///< written at rows seqlens[b]..
  const void *q = nullptr;    ///< [batch, newTokens, headsQ, d] when rotateQ
  void *qOut = nullptr;       ///< rotated Q, same shape, out dtype (may be q)
  const float *rotaryCos = nullptr,
              *rotarySin = nullptr; ///< [positions, rotaryDim/2]
};

/// KernelArgs of an append_kv call (work items: batch * headsQ * ceil(
/// newTokens / bm)). The cache lengths are not advanced: the caller adds
/// newTokens to its seqlens after the call.
KernelArgs makeAppendKvParams(const KernelSpec &spec,
                              const AppendKvProblem &problem,
                              const AppendKvBuffers &buffers);

} // namespace fmhajit
