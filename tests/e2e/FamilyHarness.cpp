//===- FamilyHarness.cpp - Running the multi-stage families in e2e tests --===//
#include "FamilyHarness.h"
#include "runtime/numerics/KvCacheData.h"
#include "specs/Errors.h"
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::e2e;

HostExecutor &fmhajit::e2e::familyExecutor() {
  static HostExecutor executor(2);
  return executor;
}

llvm::Expected<HostSplitKv> fmhajit::e2e::loadSplitKv(const KernelSpec &split) {
  HostForwardRunner *runner = HostForwardRunner::shared();
  if (!runner)
    return makeError(ErrorKind::Jit, "no host runner");
  return HostSplitKv::load(split, runner->cache());
}

llvm::Error fmhajit::e2e::runSplitKv(const KernelSpec &spec,
                                     const AttentionProblem &problem,
                                     ForwardData &data, unsigned numSplits) {
  auto kernels = loadSplitKv(spec);
  if (!kernels)
    return kernels.takeError();
  SplitKvWorkspaceSize size = splitKvWorkspaceSize(spec, problem, numSplits);
  std::vector<float> oAccum(size.oAccum, NAN), lseAccum(size.lseAccum, NAN);
  KernelArgs params =
      makeSplitKvParams(spec, problem, data.buffers(), numSplits,
                        {oAccum.data(), lseAccum.data()});
  kernels->run(params, familyExecutor());
  return llvm::Error::success();
}

PagedData::PagedData(const KernelSpec &spec, const PagedProblem &p,
                     uint64_t seed)
    : q(spec.dtype, numElements(p.attention.qShape())),
      kPool(spec.dtype, numElements(p.cache.shape(
                            p.attention.batch, p.attention.headsKv, spec.d))),
      vPool(spec.dtype,
            numElements(p.cache.shape(p.attention.batch, p.attention.headsKv,
                                      spec.headDimV()))),
      o(spec.outType(), numElements(p.attention.oShape())) {
  const AttentionProblem &a = p.attention;
  q.fillNormal(seed * 5);
  blockTable = shuffledBlockTable(p.cache, p.cacheLens, seed * 5 + 1);
  fillCache(kPool, p.cache, blockTable, p.cacheLens, a.headsKv, a.d,
            seed * 5 + 2);
  fillCache(vPool, p.cache, blockTable, p.cacheLens, a.headsKv, a.dv,
            seed * 5 + 3);
  seqlens.assign(p.cacheLens.begin(), p.cacheLens.end());
  o.poison();
  if (spec.lse)
    lse.assign(numElements(a.lseShape()), NAN);
  if (spec.bias == Bias::Alibi)
    slopes = a.resolvedAlibiSlopes();
}

ForwardBuffers PagedData::query() {
  ForwardBuffers b{q.data(), nullptr, nullptr, o.data()};
  b.lse = lse.empty() ? nullptr : lse.data();
  b.alibiSlopes = slopes.empty() ? nullptr : slopes.data();
  return b;
}

KvCacheBuffers PagedData::cache() {
  return {kPool.data(), vPool.data(), blockTable.data(), seqlens.data()};
}

llvm::Expected<PagedCheck> fmhajit::e2e::checkPaged(const KernelSpec &spec,
                                                    const PagedProblem &problem,
                                                    unsigned numSplits,
                                                    uint64_t seed) {
  if (llvm::Error err = problem.validate(spec))
    return std::move(err);
  auto kernels = loadSplitKv(spec);
  if (!kernels)
    return kernels.takeError();
  PagedData data(spec, problem, seed);
  SplitKvWorkspaceSize size =
      splitKvWorkspaceSize(spec, problem.attention, numSplits);
  std::vector<float> oAccum(size.oAccum, NAN), lseAccum(size.lseAccum, NAN);
  KernelArgs params =
      makePagedParams(spec, problem, data.query(), data.cache(), numSplits,
                      {oAccum.data(), lseAccum.data()});
  kernels->run(params, familyExecutor());
  ReferenceOutput ref =
      referencePaged(spec, problem, data.q.toFloat(), data.kPool.toFloat(),
                     data.vPool.toFloat(), data.blockTable);
  PagedCheck check;
  check.o = data.o.toFloat();
  check.refO = std::move(ref.o);
  check.compare = compareOutputs(check.o, check.refO, data.lse,
                                 spec.lse ? ref.lse : std::vector<double>(),
                                 spec.outType());
  return check;
}

AppendData::AppendData(const KernelSpec &spec, const AppendKvProblem &p,
                       uint64_t seed)
    : kNew(spec.dtype, numElements(p.newShape(p.d))),
      vNew(spec.dtype, numElements(p.newShape(p.dv))),
      kCache(spec.dtype, numElements(p.cache.shape(p.batch, p.headsKv, p.d))),
      vCache(spec.dtype, numElements(p.cache.shape(p.batch, p.headsKv, p.dv))),
      q(spec.dtype, p.rotateQ ? numElements(p.qShape()) : 0),
      qOut(spec.outType(), p.rotateQ ? numElements(p.qShape()) : 0) {
  kNew.fillNormal(seed * 7);
  vNew.fillNormal(seed * 7 + 1);
  q.fillNormal(seed * 7 + 2);
  qOut.poison();
  if (p.cache.isPaged()) {
    std::vector<int64_t> after(p.cacheLens);
    for (int64_t &len : after)
      len += p.newTokens;
    blockTable = shuffledBlockTable(p.cache, after, seed * 7 + 3);
  }
  fillCache(kCache, p.cache, blockTable, p.cacheLens, p.headsKv, p.d,
            seed * 7 + 4);
  fillCache(vCache, p.cache, blockTable, p.cacheLens, p.headsKv, p.dv,
            seed * 7 + 5);
  seqlens.assign(p.cacheLens.begin(), p.cacheLens.end());
  if (p.rotary != RotaryForm::None)
    tables = makeRotaryTables(p.rotaryPositions(), p.resolvedRotaryDim());
}

AppendKvBuffers AppendData::buffers() {
  AppendKvBuffers b;
  b.kNew = kNew.data();
  b.vNew = vNew.data();
  b.cache = {kCache.data(), vCache.data(),
             blockTable.empty() ? nullptr : blockTable.data(), seqlens.data()};
  b.q = q.size() ? q.data() : nullptr;
  b.qOut = qOut.size() ? qOut.data() : nullptr;
  b.rotaryCos = tables.cos.empty() ? nullptr : tables.cos.data();
  b.rotarySin = tables.sin.empty() ? nullptr : tables.sin.data();
  return b;
}

llvm::Expected<AppendKvCheck> fmhajit::e2e::checkAppend(
    const KernelSpec &spec, const AppendKvProblem &problem, uint64_t seed,
    std::unique_ptr<AppendData> *dataOut, AppendKvReference *refOut) {
  if (llvm::Error err = problem.validate(spec))
    return std::move(err);
  HostForwardRunner *runner = HostForwardRunner::shared();
  if (!runner)
    return makeError(ErrorKind::Jit, "no host runner");
  llvm::Expected<HostKernel> kernel = runner->load(spec);
  if (!kernel)
    return kernel.takeError();
  auto data = std::make_unique<AppendData>(spec, problem, seed);
  std::vector<float> kBefore = data->kCache.toFloat(),
                     vBefore = data->vCache.toFloat();
  kernel->run(makeAppendKvParams(spec, problem, data->buffers()),
              familyExecutor());
  AppendKvReference ref = referenceAppendKv(
      problem, data->tables, kBefore, vBefore, data->blockTable,
      data->kNew.toFloat(), data->vNew.toFloat(), data->q.toFloat());
  AppendKvCheck check =
      compareAppendKv(problem, data->blockTable, ref, data->kCache.toFloat(),
                      data->vCache.toFloat(), kBefore, vBefore,
                      data->qOut.toFloat(), spec.dtype, spec.outType());
  if (dataOut)
    *dataOut = std::move(data);
  if (refOut)
    *refOut = std::move(ref);
  return check;
}
