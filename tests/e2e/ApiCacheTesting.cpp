//===- ApiCacheTesting.cpp - The public API on K/V caches -----------------===//
#include "tests/e2e/ApiCacheTesting.h"
#include "runtime/api/PagedLowering.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/device/DeviceCopies.h"
#include "runtime/harness/AppendCase.h"
#include "runtime/numerics/FamilyReference.h"
#include "runtime/numerics/KvCacheData.h"
#include "specs/ArchTable.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

static std::vector<int64_t> widen(const std::vector<int32_t> &lengths) {
  return std::vector<int64_t>(lengths.begin(), lengths.end());
}

static DType dtypeOf(const api::Problem &p) { return toDType(p.dtype); }

/// "" for success, else the status as text.
static std::string errorText(const api::Status &s) {
  return s.ok() ? "" : s.toString();
}

// A run that did not happen has not passed.
static CompareResult notRun() {
  CompareResult r;
  r.pass = false;
  return r;
}

api::Problem e2e::pagedProblem(int64_t headsQ, int64_t headsKv, int64_t sq,
                               int64_t d, api::DType dtype,
                               std::vector<int32_t> lens, int64_t pageSize) {
  api::Problem p;
  p.batch = int64_t(lens.size());
  p.headsQ = headsQ, p.headsKv = headsKv, p.seqlenQ = sq, p.headDim = d,
  p.dtype = dtype;
  p.pagesKv.pageSize = pageSize;
  p.pagesKv.numPages = 2;
  for (int32_t len : lens) {
    int64_t pages = (len + pageSize - 1) / pageSize;
    p.pagesKv.numPages += pages;
    p.pagesKv.maxPagesPerSeq = std::max(p.pagesKv.maxPagesPerSeq, pages + 1);
  }
  p.seqlensK = std::move(lens);
  return p;
}

api::AppendProblem e2e::appendProblem(std::vector<int32_t> lens,
                                      int64_t newTokens, int64_t pageSize,
                                      api::Rotary rotary, int64_t d,
                                      api::DType dtype) {
  api::AppendProblem p;
  p.batch = int64_t(lens.size());
  p.headsKv = 2;
  p.headsQ = 8;
  p.newTokens = newTokens;
  p.headDim = d;
  p.dtype = dtype;
  p.rotary = rotary;
  int64_t longest = 0;
  for (int32_t len : lens)
    longest = std::max<int64_t>(longest, len + newTokens);
  if (pageSize) {
    p.pagesKv.pageSize = pageSize;
    p.pagesKv.maxPagesPerSeq = (longest + pageSize - 1) / pageSize + 1;
    p.pagesKv.numPages = p.pagesKv.maxPagesPerSeq * p.batch + 1;
  } else {
    p.capacity = longest + 5;
  }
  p.seqlens = std::move(lens);
  return p;
}

PagedPools e2e::makePools(const api::Problem &p, uint64_t seed) {
  KvCacheLayout layout = pagedLayoutOf(p);
  int64_t headsKv = p.headsKv ? p.headsKv : p.headsQ,
          dv = p.headDimV ? p.headDimV : p.headDim;
  PagedPools pools{
      HostTensor(dtypeOf(p),
                 numElements(layout.shape(p.batch, headsKv, p.headDim))),
      HostTensor(dtypeOf(p), numElements(layout.shape(p.batch, headsKv, dv))),
      shuffledBlockTable(layout, widen(p.seqlensK), seed)};
  fillCache(pools.kPool, layout, pools.blockTable, widen(p.seqlensK), headsKv,
            p.headDim, seed + 1);
  fillCache(pools.vPool, layout, pools.blockTable, widen(p.seqlensK), headsKv,
            dv, seed + 2);
  return pools;
}

// The GPU run of a paged plan: device copies of the host Tensors \p t
// (block table and lengths included) and the workspace; O and LSE back.
static std::string runPagedOnGpu(const api::Plan &plan,
                                 const api::Tensors &host, const HostTensor &q,
                                 HostTensor &o, std::vector<float> &lse,
                                 const PagedPools &pools,
                                 const std::vector<int32_t> &lengths) {
  DeviceCopies gpu(findArch(plan.target())->backend);
  api::Tensors t = host;
  t.q = gpu.upload(host.q, q.sizeInBytes(), "q");
  t.k = gpu.upload(host.k, pools.kPool.sizeInBytes(), "k pool");
  t.v = gpu.upload(host.v, pools.vPool.sizeInBytes(), "v pool");
  t.o = gpu.upload(host.o, o.sizeInBytes(), "o");
  t.lse = gpu.upload<float>(host.lse, lse.size() * 4, "lse");
  t.blockTable = gpu.upload<const int32_t>(
      host.blockTable, pools.blockTable.size() * 4, "table");
  t.seqlensK =
      gpu.upload<const int32_t>(host.seqlensK, lengths.size() * 4, "seqlens_k");
  t.workspace = gpu.allocate(size_t(plan.workspaceBytes()), "workspace");
  if (!gpu.error().empty())
    return gpu.error();
  if (api::Status s = api::run(plan, t); !s.ok())
    return s.toString();
  gpu.download(t.o, o.data(), o.sizeInBytes());
  gpu.download(t.lse, lse.data(), lse.size() * 4);
  return gpu.error();
}

CompareResult e2e::runPagedAgainstReference(const api::Plan &plan,
                                            const api::Problem &problem,
                                            const PagedPools &pools,
                                            std::vector<int32_t> lengths,
                                            uint64_t seed) {
  llvm::Expected<LoweredProblem> l = lowerProblem(problem, plan.target());
  EXPECT_TRUE(bool(l)) << llvm::toString(l.takeError());
  if (!l)
    return notRun();
  const KernelSpec &f = l->features;
  if (lengths.empty())
    lengths = problem.seqlensK;
  PagedProblem paged =
      PagedProblem::make(f, l->problem, *l->pagedCache, widen(lengths));
  HostTensor q(f.dtype, numElements(paged.attention.qShape())),
      o(f.outType(), numElements(paged.attention.oShape()));
  q.fillNormal(seed * 11);
  o.poison();
  std::vector<float> lse(
      f.lse ? size_t(numElements(paged.attention.lseShape())) : 0, NAN);
  api::Tensors t{q.data(), pools.kPool.data(), pools.vPool.data(), o.data(),
                 lse.empty() ? nullptr : lse.data()};
  t.blockTable = pools.blockTable.data();
  t.seqlensK = lengths.data();
  std::string error = plan.device() != api::Device::Host
                          ? runPagedOnGpu(plan, t, q, o, lse, pools, lengths)
                          : errorText(api::run(plan, t));
  EXPECT_EQ(error, "");
  if (!error.empty())
    return notRun();
  ReferenceOutput ref =
      referencePaged(f, paged, q.toFloat(), pools.kPool.toFloat(),
                     pools.vPool.toFloat(), pools.blockTable);
  return compareOutputs(o.toFloat(), ref.o, lse,
                        f.lse ? ref.lse : std::vector<double>(), f.outType());
}

AppendOutcome e2e::checkApiAppend(const api::AppendProblem &problem,
                                  bool callerTables, uint64_t seed) {
  api::Options options;
  options.threads = 2;
  AppendOutcome out;
  std::optional<api::Plan> plan = planChecked(problem, options);
  if (!plan)
    return out;
  out.plan = *plan;
  auto run = harness::AppendCase::make(problem, plan->target(), seed);
  EXPECT_TRUE(bool(run)) << llvm::toString(run.takeError());
  if (!run)
    return out;
  llvm::Error err = run->run(*plan, callerTables);
  EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
  out.check = run->check();
  EXPECT_TRUE(out.check.pass) << out.check.summary() << "\n"
                              << plan->describe();
  out.caches = {run->kCache(), run->vCache(), run->blockTable()};
  return out;
}
