//===- ApiCacheTesting.h - The public API on K/V caches, against references
//===//
//
// The paged and append counterparts of ApiTesting.h: seeded caches as
// runtime/numerics/KvCacheData.h builds them (each sequence's pages in a random
// order from the pool, partial last pages, NaN in every row no sequence
// uses, so a stray read shows in O), outputs poisoned, then plan() and
// run() / append() through fmhajit/Fmhajit.h only, checked against the
// float64 references of runtime/numerics/FamilyReference.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "runtime/numerics/AppendKvCompare.h"
#include "runtime/numerics/HostTensor.h"
#include "runtime/numerics/KvCache.h"
#include "tests/e2e/ApiTesting.h"
#include <cstdint>
#include <vector>

namespace fmhajit::e2e {

/// A paged problem on the host whose pool holds every sequence's pages
/// (\p lens keys each) plus two spare.
api::Problem pagedProblem(int64_t headsQ, int64_t headsKv, int64_t sq,
                          int64_t d, api::DType dtype,
                          std::vector<int32_t> lens, int64_t pageSize);

/// An append on the host of \p newTokens rows to caches holding \p lens
/// rows (8 query heads over 2 K/V heads): paged with room for one more page
/// per sequence when \p pageSize, else contiguous with 5 rows to spare.
api::AppendProblem appendProblem(std::vector<int32_t> lens, int64_t newTokens,
                                 int64_t pageSize, api::Rotary rotary,
                                 int64_t d = 128,
                                 api::DType dtype = api::DType::BF16);

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
CompareResult runPagedAgainstReference(const api::Plan &plan,
                                       const api::Problem &problem,
                                       const PagedPools &pools,
                                       std::vector<int32_t> seqlensK,
                                       uint64_t seed);

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
AppendOutcome checkApiAppend(const api::AppendProblem &problem,
                             bool callerTables = false, uint64_t seed = 1);

} // namespace fmhajit::e2e
