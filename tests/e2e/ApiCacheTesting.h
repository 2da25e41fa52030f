//===- ApiCacheTesting.h - The public API on K/V caches, against references ===//
//
// The paged and append counterparts of ApiTesting.h: seeded caches as
// runtime/KvCacheData.h builds them (each sequence's pages in a random
// order from the pool, partial last pages, NaN in every row no sequence
// uses, so a stray read shows in O), outputs poisoned, then plan() and
// run() / append() through fmhajit/Fmhajit.h only, checked against the
// float64 references of runtime/FamilyReference.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "runtime/AppendKvCompare.h"
#include "runtime/HostTensor.h"
#include "runtime/KvCache.h"
#include "tests/e2e/ApiTesting.h"
#include <cstdint>
#include <vector>

namespace fmhajit::e2e {

/// The pools and block table of a paged api::Problem (BSHD Q and O).
struct PagedPools {
  HostTensor kPool{DType::F32, 0}, vPool{DType::F32, 0};
  std::vector<int32_t> blockTable;
};

/// Pools for \p problem's seqlensK with shuffled pages and NaN elsewhere.
PagedPools makePools(const api::Problem &problem, uint64_t seed);

/// Runs \p plan (of \p problem, paged) on \p pools with fresh Q and
/// poisoned O/LSE, \p seqlensK (empty: the problem's) given through
/// Tensors, and compares with referencePaged for those lengths.
CompareResult runPagedAgainstReference(const api::Plan &plan, const api::Problem &problem,
                                       const PagedPools &pools, std::vector<int32_t> seqlensK,
                                       uint64_t seed);

/// plan() + makePools + runPagedAgainstReference; fails the calling test
/// on any error or mismatch.
ApiCheck checkApiPaged(const api::Problem &problem, api::Options options = {},
                       uint64_t seed = 1);

/// What an append through the API left behind, checked.
struct AppendOutcome {
  api::Plan plan;
  AppendKvCheck check;
  /// The caches after the append (paged: pools and table), for attention.
  PagedPools caches;
};

/// plan(AppendProblem) + append() on seeded caches (rows past each length
/// NaN), the plan's rotary tables unless \p callerTables; compared with
/// referenceAppendKv. Fails the calling test on any error.
AppendOutcome checkApiAppend(const api::AppendProblem &problem, bool callerTables = false,
                             uint64_t seed = 1);

} // namespace fmhajit::e2e
