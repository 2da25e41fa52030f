//===- FamilyHarness.h - Running the multi-stage families in e2e tests ----===//
//
// The families' counterparts of ForwardHarness: a ForwardRunner that runs a
// split kernel and its combine with a given number of parts (so split-KV is
// checked by checkForward against the forward reference, on ForwardData),
// and the data and checks of paged attention and append_kv cases, built
// with runtime/numerics/KvCacheData.h (pages shuffled, unused rows NaN).
// Kernels load through the shared HostForwardRunner's cache.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ForwardHarness.h"
#include "runtime/device/PagedKv.h"
#include "runtime/device/SplitKv.h"
#include "runtime/numerics/AppendKvCompare.h"
#include "runtime/numerics/FamilyReference.h"
#include "runtime/numerics/KvCache.h"
#include <cstdint>
#include <vector>

namespace fmhajit::e2e {

/// A worker pool of two threads shared by the family tests.
HostExecutor &familyExecutor();

/// Loads \p split's kernel and its combine through the shared cache.
llvm::Expected<HostSplitKv> loadSplitKv(const KernelSpec &split);

/// Runs \p spec (fwd_splitkv) on \p data with \p numSplits parts, the
/// workspace poisoned with NaN; a ForwardRunner once bound to a count.
llvm::Error runSplitKv(const KernelSpec &spec, const AttentionProblem &problem,
                       ForwardData &data, unsigned numSplits);

/// The inputs, cache and poisoned outputs of one fwd_paged call.
struct PagedData {
  PagedData(const KernelSpec &spec, const PagedProblem &problem, uint64_t seed);

  HostTensor q, kPool, vPool, o;
  std::vector<float> lse, slopes;
  std::vector<int32_t> blockTable, seqlens;

  ForwardBuffers query();
  KvCacheBuffers cache();
};

/// What one paged run gave, next to its reference.
struct PagedCheck {
  CompareResult compare;
  std::vector<float> o;
  std::vector<double> refO;
};

/// Runs \p spec (fwd_paged) on seeded data with \p numSplits parts and
/// compares with referencePaged.
llvm::Expected<PagedCheck> checkPaged(const KernelSpec &spec,
                                      const PagedProblem &problem,
                                      unsigned numSplits, uint64_t seed);

/// The buffers of one append_kv call, caches filled up to cacheLens.
struct AppendData {
  AppendData(const KernelSpec &spec, const AppendKvProblem &problem,
             uint64_t seed);

  HostTensor kNew, vNew, kCache, vCache, q, qOut;
  std::vector<int32_t> blockTable, seqlens;
  RotaryTables tables;

  AppendKvBuffers buffers();
};

/// Validates \p problem, appends on seeded data and compares with
/// referenceAppendKv; \p data (when given) gets the buffers after the run.
llvm::Expected<AppendKvCheck>
checkAppend(const KernelSpec &spec, const AppendKvProblem &problem,
            uint64_t seed, std::unique_ptr<AppendData> *data = nullptr,
            AppendKvReference *ref = nullptr);

} // namespace fmhajit::e2e
