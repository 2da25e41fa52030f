//===- AppendCase.cpp - One K/V cache append on seeded inputs, checked ----===//
#include "runtime/harness/AppendCase.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/AppendLowering.h"
#include "runtime/device/DeviceCopies.h"
#include "runtime/harness/BundleMeta.h"
#include "runtime/harness/DeviceReport.h"
#include "runtime/numerics/HostTensor.h"
#include "runtime/numerics/KvCacheData.h"
#include "runtime/numerics/Rotary.h"
#include "runtime/numerics/RunBundle.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"

using namespace fmhajit;
using namespace fmhajit::harness;

static HostTensor cacheTensor(const LoweredAppend &l, int64_t dim) {
  const AppendKvProblem &p = l.problem;
  return HostTensor(l.features.dtype,
                    numElements(p.cache.shape(p.batch, p.headsKv, dim)));
}

struct AppendCase::State {
  State(LoweredAppend lowered, uint64_t seed)
      : l(std::move(lowered)), seed(seed),
        kNew(l.features.dtype, numElements(l.problem.newShape(l.problem.d))),
        vNew(l.features.dtype, numElements(l.problem.newShape(l.problem.dv))),
        q(l.features.dtype,
          l.problem.rotateQ ? numElements(l.problem.qShape()) : 0),
        qOut(l.features.outType(),
             l.problem.rotateQ ? numElements(l.problem.qShape()) : 0),
        kCache(cacheTensor(l, l.problem.d)),
        vCache(cacheTensor(l, l.problem.dv)), kSeeded(kCache), vSeeded(vCache) {
  }

  LoweredAppend l;
  uint64_t seed;
  HostTensor kNew, vNew, q, qOut, kCache, vCache;
  HostTensor kSeeded, vSeeded;         ///< the caches before any append
  std::vector<float> kBefore, vBefore; ///< the seeded caches
  std::vector<int32_t> blockTable;
  RotaryTables tables;
  std::unique_ptr<DeviceCopies> gpu;
  api::AppendTensors tensors; ///< of the last run()
};

// The caches hold data in each sequence's first rows and NaN elsewhere; a
// paged cache's pages have room for the new rows, in a shuffled order.
static void fillInputs(AppendCase::State &s) {
  const AppendKvProblem &p = s.l.problem;
  s.kNew.fillNormal(s.seed);
  s.vNew.fillNormal(s.seed + 1);
  s.q.fillNormal(s.seed + 2);
  if (p.cache.isPaged()) {
    std::vector<int64_t> after(p.cacheLens);
    for (int64_t &len : after)
      len += p.newTokens;
    s.blockTable = shuffledBlockTable(p.cache, after, s.seed + 3);
  }
  fillCache(s.kCache, p.cache, s.blockTable, p.cacheLens, p.headsKv, p.d,
            s.seed + 4);
  fillCache(s.vCache, p.cache, s.blockTable, p.cacheLens, p.headsKv, p.dv,
            s.seed + 5);
  s.kSeeded = s.kCache;
  s.vSeeded = s.vCache;
  s.kBefore = s.kCache.toFloat();
  s.vBefore = s.vCache.toFloat();
  if (p.rotary != RotaryForm::None)
    s.tables = makeRotaryTables(p.rotaryPositions(), p.resolvedRotaryDim(),
                                s.l.rotaryBase);
}

llvm::Expected<AppendCase> AppendCase::make(const api::AppendProblem &problem,
                                            const std::string &target,
                                            uint64_t seed) {
  auto lowered = lowerAppend(problem, target);
  if (!lowered)
    return lowered.takeError();
  auto state = std::make_unique<State>(std::move(*lowered), seed);
  fillInputs(*state);
  return AppendCase(std::move(state));
}

AppendCase::AppendCase(std::unique_ptr<State> state) : s(std::move(state)) {}
AppendCase::AppendCase(AppendCase &&) = default;
AppendCase &AppendCase::operator=(AppendCase &&) = default;
AppendCase::~AppendCase() = default;
const LoweredAppend &AppendCase::lowered() const { return s->l; }
const HostTensor &AppendCase::kCache() const { return s->kCache; }
const HostTensor &AppendCase::vCache() const { return s->vCache; }
const std::vector<int32_t> &AppendCase::blockTable() const {
  return s->blockTable;
}

static api::AppendTensors hostTensors(AppendCase::State &s, bool callerTables) {
  api::AppendTensors t{s.kNew.data(), s.vNew.data(), s.kCache.data(),
                       s.vCache.data(),
                       s.blockTable.empty() ? nullptr : s.blockTable.data()};
  if (s.l.problem.rotateQ)
    t.q = s.q.data(), t.qOut = s.qOut.data();
  if (callerTables && !s.tables.cos.empty())
    t.rotaryCos = s.tables.cos.data(), t.rotarySin = s.tables.sin.data();
  return t;
}

// Device twins of \p host's buffers, and of the lengths, which a GPU
// append reads from device memory.
static llvm::Expected<api::AppendTensors>
deviceTensors(AppendCase::State &s, const api::AppendTensors &host,
              const api::Plan &plan) {
  s.gpu = std::make_unique<DeviceCopies>(backendOf(plan));
  DeviceCopies &gpu = *s.gpu;
  api::AppendTensors t = host;
  t.kNew = gpu.upload(host.kNew, s.kNew.sizeInBytes(), "k_new");
  t.vNew = gpu.upload(host.vNew, s.vNew.sizeInBytes(), "v_new");
  t.kCache = gpu.upload(host.kCache, s.kCache.sizeInBytes(), "k cache");
  t.vCache = gpu.upload(host.vCache, s.vCache.sizeInBytes(), "v cache");
  t.blockTable = gpu.upload<const int32_t>(host.blockTable,
                                           s.blockTable.size() * 4, "table");
  t.seqlens = gpu.upload<const int32_t>(s.l.seqlens.data(),
                                        s.l.seqlens.size() * 4, "seqlens");
  if (host.q) {
    t.q = gpu.upload(host.q, s.q.sizeInBytes(), "q");
    t.qOut = gpu.upload(host.qOut, s.qOut.sizeInBytes(), "q_out");
  }
  if (host.rotaryCos) {
    t.rotaryCos =
        gpu.upload<const float>(host.rotaryCos, s.tables.cos.size() * 4, "cos");
    t.rotarySin =
        gpu.upload<const float>(host.rotarySin, s.tables.sin.size() * 4, "sin");
  }
  if (!gpu.error().empty())
    return makeError(ErrorKind::Driver, gpu.error());
  return t;
}

static llvm::Error downloadCaches(AppendCase::State &s) {
  DeviceCopies &gpu = *s.gpu;
  gpu.download(s.tensors.kCache, s.kCache.data(), s.kCache.sizeInBytes());
  gpu.download(s.tensors.vCache, s.vCache.data(), s.vCache.sizeInBytes());
  if (s.tensors.qOut)
    gpu.download(s.tensors.qOut, s.qOut.data(), s.qOut.sizeInBytes());
  if (!gpu.error().empty())
    return makeError(ErrorKind::Driver, gpu.error());
  return llvm::Error::success();
}

llvm::Error AppendCase::run(const api::Plan &plan, bool callerTables) {
  s->kCache = s->kSeeded;
  s->vCache = s->vSeeded;
  s->qOut.poison();
  api::AppendTensors host = hostTensors(*s, callerTables);
  if (plan.device() == api::Device::Host) {
    s->tensors = host;
    return toError(api::append(plan, host));
  }
  auto tensors = deviceTensors(*s, host, plan);
  if (!tensors)
    return tensors.takeError();
  s->tensors = *tensors;
  if (llvm::Error err = toError(api::append(plan, s->tensors)))
    return err;
  return downloadCaches(*s);
}

llvm::Error AppendCase::launch(const api::Plan &plan) {
  return toError(api::append(plan, s->tensors));
}

AppendKvCheck AppendCase::check() const {
  const AppendKvProblem &p = s->l.problem;
  AppendKvReference ref =
      referenceAppendKv(p, s->tables, s->kBefore, s->vBefore, s->blockTable,
                        s->kNew.toFloat(), s->vNew.toFloat(), s->q.toFloat());
  return compareAppendKv(p, s->blockTable, ref, s->kCache.toFloat(),
                         s->vCache.toFloat(), s->kBefore, s->vBefore,
                         s->qOut.toFloat(), s->l.features.dtype,
                         s->l.features.outType());
}

llvm::Error AppendCase::save(const std::string &dir,
                             const KernelSpec &kernel) const {
  const AppendKvProblem &p = s->l.problem;
  std::vector<float> kNew = s->kNew.toFloat(), vNew = s->vNew.toFloat(),
                     k = s->kCache.toFloat(), v = s->vCache.toFloat(),
                     q = s->q.toFloat(), qOut = s->qOut.toFloat();
  std::vector<BundleArray> arrays = {
      {"k_new.npy", kNew, p.newShape(p.d)},
      {"v_new.npy", vNew, p.newShape(p.dv)},
      {"k_cache.npy", k, p.cache.shape(p.batch, p.headsKv, p.d)},
      {"v_cache.npy", v, p.cache.shape(p.batch, p.headsKv, p.dv)}};
  if (p.rotateQ) {
    arrays.push_back({"q.npy", q, p.qShape()});
    arrays.push_back({"q_out.npy", qOut, p.qShape()});
  }
  int64_t half = s->tables.dim / 2;
  if (p.rotary != RotaryForm::None) {
    arrays.push_back(
        {"rotary_cos.npy", s->tables.cos, {s->tables.positions, half}});
    arrays.push_back(
        {"rotary_sin.npy", s->tables.sin, {s->tables.positions, half}});
  }
  BundleMeta meta =
      familyMetadata(kernel, p.batch, p.headsQ, p.headsKv, s->seed);
  llvm::json::Array lens;
  for (int64_t len : p.cacheLens)
    lens.push_back(len);
  meta.emplace_back("new_tokens", p.newTokens);
  meta.emplace_back("cache_lens", std::move(lens));
  meta.emplace_back("page_size", p.cache.pageSize);
  meta.emplace_back("max_pages_per_seq", p.cache.maxPagesPerSeq);
  meta.emplace_back("block_table",
                    tableJson(s->blockTable, p.cache.maxPagesPerSeq));
  meta.emplace_back("rotary", rotaryFormName(p.rotary));
  meta.emplace_back("rotary_dim", p.resolvedRotaryDim());
  meta.emplace_back("rotate_q", p.rotateQ);
  return writeBundle(dir, arrays, meta);
}

double AppendCase::bytes() const {
  return 2.0 * double(s->kNew.sizeInBytes() + s->vNew.sizeInBytes()) +
         double(s->q.sizeInBytes() + s->qOut.sizeInBytes());
}
