//===- ForwardCase.cpp - One attention call on seeded inputs, checked -----===//
#include "runtime/harness/ForwardCase.h"
#include "compiler/variants/HostVariant.h"
#include "compiler/variants/VariantRegistry.h"
#include "runtime/api/ApiStatus.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/device/DeviceCopies.h"
#include "runtime/harness/BundleMeta.h"
#include "runtime/harness/DeviceReport.h"
#include "runtime/harness/LaidOutTensor.h"
#include "runtime/numerics/FamilyReference.h"
#include "runtime/numerics/KvCacheData.h"
#include "runtime/numerics/Reference.h"
#include "runtime/numerics/RunBundle.h"
#include "specs/ArchTable.h"
#include "specs/Errors.h"
#include <algorithm>
#include <cmath>
#include <random>

using namespace fmhajit;
using namespace fmhajit::harness;

struct ForwardCase::State {
  State(LoweredProblem lowered, uint64_t seed)
      : l(std::move(lowered)), seed(seed),
        q(l.features.dtype, l.qShape, l.strides.q),
        k(l.features.dtype, l.kShape, l.strides.k),
        v(l.features.dtype, l.vShape, l.strides.v),
        o(l.features.outType(), l.oShape, l.strides.o) {}

  LoweredProblem l;
  uint64_t seed;
  LaidOutTensor q, k, v, o;
  std::vector<float> lse;
  std::vector<int32_t> blockTable; ///< paged only
  std::vector<float> bias; ///< bias=elementwise: at l.strides' bias strides
  std::unique_ptr<DeviceCopies> gpu;
  api::Tensors tensors; ///< of the last run(): host or device pointers
  /// fp8: Q, K and V hold q / descale; distinct factors, so a kernel that
  /// swaps or drops one fails the check.
  float descaleQ = 1, descaleK = 1, descaleV = 1;
  api::Dropout dropout; ///< Problem::dropout: p, seed, offset of each run

  bool paged() const { return l.pagedCache.has_value(); }
  std::vector<int64_t> keyLengths() const {
    return std::vector<int64_t>(l.seqlensK.begin(), l.seqlensK.end());
  }
};

// A paged cache holds each sequence's rows in its shuffled pages and NaN
// everywhere else, so a read past a sequence's keys shows in O.
static void fillInputs(ForwardCase::State &s) {
  const KernelSpec &f = s.l.features;
  s.q.data.fillNormal(s.seed);
  if (!s.paged()) {
    s.k.data.fillNormal(s.seed + 1);
    s.v.data.fillNormal(s.seed + 2);
    return;
  }
  const KvCacheLayout &cache = *s.l.pagedCache;
  const AttentionProblem &a = s.l.problem;
  s.blockTable = shuffledBlockTable(cache, s.keyLengths(), s.seed + 3);
  fillCache(s.k.data, cache, s.blockTable, s.keyLengths(), a.headsKv, f.d,
            s.seed + 1);
  fillCache(s.v.data, cache, s.blockTable, s.keyLengths(), a.headsKv,
            f.headDimV(), s.seed + 2);
}

// Sinks near a full row's log-sum-exp (about log Sk for unit-variance
// scores), so that they matter in long rows as in short ones: a row with
// one key is mostly sink, a full row shares its mass with it.
static void makeSinks(LoweredProblem &l, uint64_t seed) {
  if (!l.features.sink || !l.sinks.empty())
    return;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> around(-2.0f, 2.0f);
  float center = std::log(float(std::max<int64_t>(1, l.problem.maxSeqlenK())));
  for (int64_t h = 0; h < l.problem.headsQ; ++h)
    l.sinks.push_back(center + around(rng));
  l.problem.sinks = l.sinks;
}

// Unit-variance values with one in eight -inf (attn_mask's masked keys; a
// short row may lose every key), drawn over the span the bias strides
// address, so a broadcast dim holds one copy. The reference gets the bias
// expanded and packed, as the kernel should see it.
static void makeBias(ForwardCase::State &s, uint64_t seed) {
  if (s.l.features.bias != Bias::Elementwise)
    return;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  s.bias.resize(size_t(biasSpanElements(s.l)));
  for (float &x : s.bias)
    x = rng() % 8 == 0 ? -INFINITY : normal(rng);
  const AttentionProblem &a = s.l.problem;
  const TensorStrides &at = s.l.strides.bias;
  std::vector<float> &packed = s.l.problem.bias;
  packed.clear();
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.headsQ; ++h)
      for (int64_t i = 0; i < a.seqlenQ; ++i)
        for (int64_t j = 0; j < a.seqlenK; ++j)
          packed.push_back(
              s.bias[size_t(b * at.batch + h * at.head + i * at.row +
                            j * s.l.strides.biasKey)]);
}

llvm::Expected<ForwardCase> ForwardCase::make(const api::Problem &problem,
                                              const std::string &target,
                                              uint64_t seed) {
  auto lowered = lowerProblem(problem, target);
  if (!lowered)
    return lowered.takeError();
  auto state = std::make_unique<State>(std::move(*lowered), seed);
  if (isFp8(state->l.features.dtype)) {
    state->descaleQ = 0.5f;
    state->descaleK = 0.25f;
    state->descaleV = 2.0f;
  }
  fillInputs(*state);
  makeSinks(state->l, seed + 4);
  makeBias(*state, seed + 5);
  ForwardCase run(std::move(state));
  if (run.s->l.features.dropout) // seeds far apart in all 64 bits
    run.setDropout(
        {0.25f, (seed + 6) * 0x9E3779B97F4A7C15ull, uint32_t(seed + 7)});
  return std::move(run);
}

void ForwardCase::setVariantTensors(std::vector<std::vector<float>> tensors) {
  s->l.problem.variantTensors = std::move(tensors);
}

void ForwardCase::setDropout(const api::Dropout &dropout) {
  s->dropout = dropout;
  s->l.problem.dropout = {dropout.p, dropout.seed, dropout.offset};
}

ForwardCase::ForwardCase(std::unique_ptr<State> state) : s(std::move(state)) {}
ForwardCase::ForwardCase(ForwardCase &&) = default;
ForwardCase &ForwardCase::operator=(ForwardCase &&) = default;
ForwardCase::~ForwardCase() = default;
const LoweredProblem &ForwardCase::lowered() const { return s->l; }

void ForwardCase::setDescales(float q, float k, float v) {
  s->descaleQ = q;
  s->descaleK = k;
  s->descaleV = v;
}

static void poisonOutputs(ForwardCase::State &s) {
  s.o.data.poison();
  s.lse.assign(
      s.l.features.lse ? size_t(numElements(s.l.problem.lseShape())) : 0, NAN);
}

static void passDescales(const ForwardCase::State &s, api::Tensors &t) {
  t.descaleQ = s.descaleQ;
  t.descaleK = s.descaleK;
  t.descaleV = s.descaleV;
}

static std::vector<api::VariantTensor>
hostVariantTensors(const ForwardCase::State &s) {
  std::vector<api::VariantTensor> out;
  for (const std::vector<float> &t : s.l.problem.variantTensors)
    out.push_back({t.data(), int64_t(t.size())});
  return out;
}

static api::Tensors hostTensors(ForwardCase::State &s) {
  api::Tensors t{s.q.data.data(), s.k.data.data(), s.v.data.data(),
                 s.o.data.data(), s.lse.empty() ? nullptr : s.lse.data()};
  passDescales(s, t);
  t.variantTensors = hostVariantTensors(s);
  t.dropout = s.dropout;
  t.sinks = s.l.sinks.empty() ? nullptr : s.l.sinks.data();
  t.bias = s.bias.empty() ? nullptr : s.bias.data();
  if (s.paged()) {
    t.blockTable = s.blockTable.data();
    t.seqlensK = s.l.seqlensK.data();
  }
  return t;
}

// Device twins of every buffer the plan reads (the lengths, slopes and
// tables too: a GPU plan reads them from device memory) and its workspace.
static llvm::Expected<api::Tensors> deviceTensors(ForwardCase::State &s,
                                                  const api::Plan &plan) {
  s.gpu = std::make_unique<DeviceCopies>(backendOf(plan));
  DeviceCopies &gpu = *s.gpu;
  const LoweredProblem &l = s.l;
  api::Tensors t{
      gpu.upload(s.q.data.data(), s.q.data.sizeInBytes(), "q"),
      gpu.upload(s.k.data.data(), s.k.data.sizeInBytes(), "k"),
      gpu.upload(s.v.data.data(), s.v.data.sizeInBytes(), "v"),
      gpu.upload(s.o.data.data(), s.o.data.sizeInBytes(), "o"),
      gpu.upload<float>(s.lse.data(), s.lse.size() * 4, "lse"),
      gpu.upload<const int32_t>(l.cuSeqlensQ.data(), l.cuSeqlensQ.size() * 4,
                                "cu_seqlens_q"),
      gpu.upload<const int32_t>(l.cuSeqlensK.data(), l.cuSeqlensK.size() * 4,
                                "cu_seqlens_k"),
      gpu.upload<const float>(l.alibiSlopes.data(), l.alibiSlopes.size() * 4,
                              "alibi slopes")};
  t.blockTable = gpu.upload<const int32_t>(
      s.blockTable.data(), s.blockTable.size() * 4, "block table");
  t.seqlensK = gpu.upload<const int32_t>(l.seqlensK.data(),
                                         l.seqlensK.size() * 4, "seqlens_k");
  t.sinks =
      gpu.upload<const float>(l.sinks.data(), l.sinks.size() * 4, "sinks");
  t.bias = gpu.upload<const float>(s.bias.data(), s.bias.size() * 4, "bias");
  for (const std::vector<float> &table : l.problem.variantTensors)
    t.variantTensors.push_back(
        {gpu.upload<const float>(table.data(), table.size() * 4,
                                 "variant tensor"),
         int64_t(table.size())});
  // Poisoned: a kernel that reads a partial (split-KV's, a split tail's)
  // before its part wrote it reads NaN into O, which the check fails.
  t.workspace = gpu.poisoned(size_t(plan.workspaceBytes()), "workspace");
  passDescales(s, t);
  t.dropout = s.dropout;
  if (!gpu.error().empty())
    return makeError(ErrorKind::Driver, gpu.error());
  return t;
}

llvm::Error ForwardCase::run(const api::Plan &plan) {
  poisonOutputs(*s);
  if (plan.device() == api::Device::Host) {
    s->tensors = hostTensors(*s);
    return toError(api::run(plan, s->tensors));
  }
  auto tensors = deviceTensors(*s, plan);
  if (!tensors)
    return tensors.takeError();
  s->tensors = *tensors;
  if (llvm::Error err = toError(api::run(plan, s->tensors)))
    return err;
  // The copies back wait for the launches on the default stream.
  s->gpu->download(s->tensors.o, s->o.data.data(), s->o.data.sizeInBytes());
  s->gpu->download(s->tensors.lse, s->lse.data(), s->lse.size() * 4);
  if (!s->gpu->error().empty())
    return makeError(ErrorKind::Driver, s->gpu->error());
  return llvm::Error::success();
}

llvm::Error ForwardCase::launch(const api::Plan &plan) {
  return toError(api::run(plan, s->tensors));
}

// The reference reads what the kernel computes with: each input times its
// descale factor.
static std::vector<float> scaled(std::vector<float> values, float factor) {
  if (factor != 1)
    for (float &v : values)
      v *= factor;
  return values;
}

// The variant's own code, compiled for this CPU, as the reference's
// functions, reading the run's tensors (\p tables, kept alive by the
// caller): --check compares the kernel with the math the user wrote.
static llvm::Expected<ReferenceVariant>
referenceVariant(const KernelSpec &f,
                 const std::vector<std::vector<float>> &tables,
                 std::shared_ptr<HostVariant> &keep) {
  if (f.variant.empty())
    return ReferenceVariant{};
  VariantTensors table{};
  for (size_t i = 0; i < tables.size() && i < kMaxVariantTensors; ++i)
    table.slot[i] = {tables[i].data(), int64_t(tables[i].size())};
  llvm::Expected<VariantSource> source = findVariant(f.variant);
  if (!source)
    return source.takeError();
  llvm::Expected<std::unique_ptr<HostVariant>> host =
      HostVariant::create(*source);
  if (!host)
    return host.takeError();
  keep = std::move(*host);
  ReferenceVariant out;
  const HostVariant *variant = keep.get(); // kept alive by the caller
  if (variant->hasScoreMod())
    out.scoreMod = [variant, table](double x, int64_t b, int64_t h, int64_t q,
                                    int64_t k) {
      return double(
          variant->scoreMod(float(x), int(b), int(h), int(q), int(k), &table));
    };
  if (variant->hasMaskMod())
    out.maskMod = [variant, table](int64_t b, int64_t h, int64_t q, int64_t k) {
      return variant->maskMod(int(b), int(h), int(q), int(k), &table);
    };
  return out;
}

CompareResult ForwardCase::check() const {
  const KernelSpec &f = s->l.features;
  ReferenceOutput ref;
  std::shared_ptr<HostVariant> host;
  llvm::Expected<ReferenceVariant> variant =
      referenceVariant(f, s->l.problem.variantTensors, host);
  if (!variant) // the plan compiled this variant already: an internal error
    llvm::report_fatal_error(variant.takeError());
  if (s->paged()) {
    PagedProblem paged =
        PagedProblem::make(f, s->l.problem, *s->l.pagedCache, s->keyLengths());
    ref = referencePaged(f, paged, scaled(s->q.packed(), s->descaleQ),
                         scaled(s->k.data.toFloat(), s->descaleK),
                         scaled(s->v.data.toFloat(), s->descaleV),
                         s->blockTable, *variant);
  } else {
    ref = referenceForward(f, s->l.problem, scaled(s->q.packed(), s->descaleQ),
                           scaled(s->k.packed(), s->descaleK),
                           scaled(s->v.packed(), s->descaleV), *variant);
  }
  return compareOutputs(s->o.packed(), ref.o, s->lse,
                        f.lse ? ref.lse : std::vector<double>(),
                        toleranceFor(f.dtype, f.outType()));
}

// The variant's source and its tensors' files (as runMetadata writes them:
// null without tensors), and the tensors themselves; nothing for a kernel
// without a variant.
static void addVariantMeta(const KernelSpec &kernel, const AttentionProblem &a,
                           std::vector<BundleArray> &arrays, BundleMeta &meta) {
  if (kernel.variant.empty())
    return;
  meta.emplace_back("variant", a.variantSource);
  llvm::json::Array files;
  for (size_t slot = 0; slot < a.variantTensors.size(); ++slot) {
    const std::vector<float> &t = a.variantTensors[slot];
    files.push_back(variantTensorFile(slot).str());
    arrays.push_back({variantTensorFile(slot), t, {int64_t(t.size())}});
  }
  meta.emplace_back("variant_tensors",
                    files.empty() ? llvm::json::Value(nullptr)
                                  : llvm::json::Value(std::move(files)));
}

// The paged bundle: the pools as they are, the table and the lengths.
static llvm::Error savePaged(const ForwardCase::State &s,
                             const std::string &dir, const KernelSpec &kernel,
                             unsigned numSplits) {
  const AttentionProblem &a = s.l.problem;
  const KvCacheLayout &cache = *s.l.pagedCache;
  std::vector<float> q = s.q.packed(), k = s.k.data.toFloat(),
                     v = s.v.data.toFloat(), o = s.o.packed();
  std::vector<BundleArray> arrays = {
      {"q.npy", q, a.qShape()},
      {"k_pool.npy", k, cache.shape(a.batch, a.headsKv, a.d)},
      {"v_pool.npy", v, cache.shape(a.batch, a.headsKv, a.dv)},
      {"o.npy", o, a.oShape()}};
  if (kernel.lse)
    arrays.push_back({"lse.npy", s.lse, a.lseShape()});
  BundleMeta meta =
      familyMetadata(kernel, a.batch, a.headsQ, a.headsKv, s.seed);
  llvm::json::Array lens;
  for (int32_t len : s.l.seqlensK)
    lens.push_back(len);
  meta.emplace_back("seqlen_q", a.seqlenQ);
  meta.emplace_back("scale", double(a.resolvedScale()));
  meta.emplace_back("page_size", cache.pageSize);
  meta.emplace_back("num_pages", cache.numPages);
  meta.emplace_back("num_splits", int64_t(numSplits));
  meta.emplace_back("cache_lens", std::move(lens));
  meta.emplace_back("block_table",
                    tableJson(s.blockTable, cache.maxPagesPerSeq));
  addVariantMeta(kernel, a, arrays, meta);
  return writeBundle(dir, arrays, meta);
}

llvm::Error ForwardCase::save(const std::string &dir, const KernelSpec &kernel,
                              unsigned numSplits) const {
  if (s->paged())
    return savePaged(*s, dir, kernel, numSplits);
  // fp8: the values the kernel computed with, descale factors applied.
  std::vector<float> q = scaled(s->q.packed(), s->descaleQ),
                     k = scaled(s->k.packed(), s->descaleK),
                     v = scaled(s->v.packed(), s->descaleV), o = s->o.packed();
  return writeRunBundle(dir, kernel, s->l.problem, {q, k, v, o, s->lse});
}

// Pairs a window lets through: the exact band of query i's keys.
static int64_t windowKeys(const AttentionProblem &p, int64_t i, int64_t sq,
                          int64_t sk) {
  int64_t diag = i + sk - sq;
  int64_t lo = p.windowLeft < 0 ? 0 : std::max<int64_t>(0, diag - p.windowLeft);
  int64_t hi =
      p.windowRight < 0 ? sk - 1 : std::min(sk - 1, diag + p.windowRight);
  return std::max<int64_t>(0, hi - lo + 1);
}

// Causal masks count half the pairs, as FlashAttention's and PyTorch's
// benchmarks do, so that rates compare; windows count their exact band.
double ForwardCase::flops() const {
  const KernelSpec &f = s->l.features;
  const AttentionProblem &p = s->l.problem;
  double pairs = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t sq = p.seqlenQOf(b),
            sk = s->paged() ? s->l.seqlensK[size_t(b)] : p.seqlenKOf(b);
    if (f.mask != Mask::Window)
      pairs += double(sq) * double(sk) * (f.mask == Mask::None ? 1.0 : 0.5);
    else
      for (int64_t i = 0; i < sq; ++i)
        pairs += double(windowKeys(p, i, sq, sk));
  }
  return 2.0 * double(f.d + f.headDimV()) * pairs * double(p.headsQ);
}
