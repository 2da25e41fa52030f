//===- ApiCacheTesting.cpp - The public API on K/V caches -----------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "runtime/AppendLowering.h"
#include "runtime/FamilyReference.h"
#include "runtime/KvCacheData.h"
#include "runtime/PagedLowering.h"
#include "runtime/ProblemLowering.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

static std::vector<int64_t> widen(const std::vector<int32_t> &lengths) {
  return std::vector<int64_t>(lengths.begin(), lengths.end());
}

static DType dtypeOf(const api::Problem &p) { return toDType(p.dtype); }

// A run that did not happen has not passed.
static CompareResult notRun() {
  CompareResult r;
  r.pass = false;
  return r;
}

PagedPools e2e::makePools(const api::Problem &p, uint64_t seed) {
  KvCacheLayout layout = pagedLayoutOf(p);
  int64_t headsKv = p.headsKv ? p.headsKv : p.headsQ, dv = p.headDimV ? p.headDimV : p.headDim;
  PagedPools pools{HostTensor(dtypeOf(p), numElements(layout.shape(p.batch, headsKv, p.headDim))),
                   HostTensor(dtypeOf(p), numElements(layout.shape(p.batch, headsKv, dv))),
                   shuffledBlockTable(layout, widen(p.seqlensK), seed)};
  fillCache(pools.kPool, layout, pools.blockTable, widen(p.seqlensK), headsKv, p.headDim,
            seed + 1);
  fillCache(pools.vPool, layout, pools.blockTable, widen(p.seqlensK), headsKv, dv, seed + 2);
  return pools;
}

CompareResult e2e::runPagedAgainstReference(const api::Plan &plan, const api::Problem &problem,
                                            const PagedPools &pools, std::vector<int32_t> lengths,
                                            uint64_t seed) {
  llvm::Expected<LoweredProblem> l = lowerProblem(problem, plan.target());
  EXPECT_TRUE(bool(l)) << llvm::toString(l.takeError());
  if (!l)
    return notRun();
  const KernelSpec &f = l->features;
  if (lengths.empty())
    lengths = problem.seqlensK;
  PagedProblem paged = PagedProblem::make(f, l->problem, *l->pagedCache, widen(lengths));
  HostTensor q(f.dtype, numElements(paged.attention.qShape())),
      o(f.outType(), numElements(paged.attention.oShape()));
  q.fillNormal(seed * 11);
  o.poison();
  std::vector<float> lse(f.lse ? size_t(numElements(paged.attention.lseShape())) : 0, NAN);
  api::Tensors t{q.data(), pools.kPool.data(), pools.vPool.data(), o.data(),
                 lse.empty() ? nullptr : lse.data()};
  t.blockTable = pools.blockTable.data();
  t.seqlensK = lengths.data();
  api::Status s = api::run(plan, t);
  EXPECT_TRUE(s.ok()) << s.toString();
  if (!s.ok())
    return notRun();
  ReferenceOutput ref = referencePaged(f, paged, q.toFloat(), pools.kPool.toFloat(),
                                       pools.vPool.toFloat(), pools.blockTable);
  return compareOutputs(o.toFloat(), ref.o, lse, f.lse ? ref.lse : std::vector<double>(),
                        f.outType());
}

ApiCheck e2e::checkApiPaged(const api::Problem &problem, api::Options options, uint64_t seed) {
  if (options.cacheDir.empty())
    options.cacheDir = apiCacheDir();
  ApiCheck check;
  api::Result<api::Plan> plan = api::plan(problem, options);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  if (!plan.ok())
    return check;
  check.plan = *plan;
  check.compare = runPagedAgainstReference(*plan, problem, makePools(problem, seed), {}, seed);
  EXPECT_TRUE(check.compare.pass) << check.compare.summary() << "\n" << plan->describe();
  return check;
}

namespace {
/// The buffers of one append, seeded: caches hold data up to each length.
struct AppendBuffers {
  AppendBuffers(const LoweredAppend &l, uint64_t seed)
      : kNew(l.features.dtype, numElements(l.problem.newShape(l.problem.d))),
        vNew(l.features.dtype, numElements(l.problem.newShape(l.problem.dv))),
        q(l.features.dtype, numElements(l.problem.qShape())),
        qOut(l.features.outType(), numElements(l.problem.qShape())) {
    const AppendKvProblem &p = l.problem;
    kNew.fillNormal(seed * 13);
    vNew.fillNormal(seed * 13 + 1);
    q.fillNormal(seed * 13 + 2);
    qOut.poison();
    if (p.cache.isPaged()) {
      std::vector<int64_t> after(p.cacheLens);
      for (int64_t &len : after)
        len += p.newTokens;
      blockTable = shuffledBlockTable(p.cache, after, seed * 13 + 3);
    }
    caches = {HostTensor(l.features.dtype, numElements(p.cache.shape(p.batch, p.headsKv, p.d))),
              HostTensor(l.features.dtype, numElements(p.cache.shape(p.batch, p.headsKv, p.dv))),
              blockTable};
    fillCache(caches.kPool, p.cache, blockTable, p.cacheLens, p.headsKv, p.d, seed * 13 + 4);
    fillCache(caches.vPool, p.cache, blockTable, p.cacheLens, p.headsKv, p.dv, seed * 13 + 5);
  }

  HostTensor kNew, vNew, q, qOut;
  std::vector<int32_t> blockTable;
  PagedPools caches;
};
} // namespace

AppendOutcome e2e::checkApiAppend(const api::AppendProblem &problem, bool callerTables,
                                  uint64_t seed) {
  api::Options options;
  options.threads = 2;
  options.cacheDir = apiCacheDir();
  AppendOutcome out;
  api::Result<api::Plan> plan = api::plan(problem, options);
  EXPECT_TRUE(plan.ok()) << plan.status().toString();
  llvm::Expected<LoweredAppend> l = lowerAppend(problem, "host");
  EXPECT_TRUE(bool(l)) << llvm::toString(l.takeError());
  if (!plan.ok() || !l)
    return out;
  out.plan = *plan;
  const AppendKvProblem &p = l->problem;
  AppendBuffers b(*l, seed);
  std::vector<float> kBefore = b.caches.kPool.toFloat(), vBefore = b.caches.vPool.toFloat();
  RotaryTables tables;
  if (p.rotary != RotaryForm::None)
    tables = makeRotaryTables(p.rotaryPositions(), p.resolvedRotaryDim(), problem.rotaryBase);
  api::AppendTensors t{b.kNew.data(), b.vNew.data(), b.caches.kPool.data(),
                       b.caches.vPool.data(), b.blockTable.empty() ? nullptr : b.blockTable.data()};
  if (p.rotateQ)
    t.q = b.q.data(), t.qOut = b.qOut.data();
  if (callerTables)
    t.rotaryCos = tables.cos.data(), t.rotarySin = tables.sin.data();
  api::Status s = api::append(*plan, t);
  EXPECT_TRUE(s.ok()) << s.toString();
  if (!s.ok())
    return out;
  AppendKvReference ref = referenceAppendKv(p, tables, kBefore, vBefore, b.blockTable,
                                            b.kNew.toFloat(), b.vNew.toFloat(), b.q.toFloat());
  out.check = compareAppendKv(p, b.blockTable, ref, b.caches.kPool.toFloat(),
                              b.caches.vPool.toFloat(), kBefore, vBefore, b.qOut.toFloat(),
                              l->features.dtype, l->features.outType());
  EXPECT_TRUE(out.check.pass) << out.check.summary() << "\n" << plan->describe();
  out.caches = std::move(b.caches);
  return out;
}
