//===- KvCacheData.h - Seeded cache contents for runs and tests -----------===//
//
// `fmhajit run` and the e2e tests build caches the same way, to catch
// kernels that read or write the wrong rows:
//  - a sequence's pages are drawn from a seeded random permutation of the
//    pool, so page order never matches row order;
//  - every row no sequence uses (the tail of a partial last page, spare
//    pages, block table slots past a sequence's pages) is NaN, so a stray
//    read turns an output NaN and fails the check.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/numerics/HostTensor.h"
#include "runtime/numerics/KvCache.h"
#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <vector>

namespace fmhajit {

/// A [batch, maxPagesPerSeq] block table giving sequence b the pages its
/// \p lengths[b] rows need, drawn without repeats from a \p seed-shuffled
/// pool. Slots past those pages name the pool's last unused page (a NaN
/// page) when one is left, else page 0.
std::vector<int32_t> shuffledBlockTable(const KvCacheLayout &layout,
                                        llvm::ArrayRef<int64_t> lengths,
                                        uint64_t seed);

/// Fills \p cache (the K or V cache of \p layout, rows of headsKv * dim
/// elements) with normal samples in the first \p filled[b] rows of each
/// sequence and NaN everywhere else.
void fillCache(HostTensor &cache, const KvCacheLayout &layout,
               llvm::ArrayRef<int32_t> blockTable,
               llvm::ArrayRef<int64_t> filled, int64_t headsKv, int64_t dim,
               uint64_t seed);

} // namespace fmhajit
