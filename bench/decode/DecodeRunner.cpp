//===- DecodeRunner.cpp - One decode row: the dispatcher's plan against all
//-===//
#include "bench/decode/DecodeRunner.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/HostKernel.h"
#include "runtime/numerics/Compare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/Errors.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <cmath>
#include <functional>

using namespace fmhajit;
using namespace fmhajit::bench;

double DecodeResult::bestSeconds() const {
  double best = std::min(single.bestSeconds, plan.bestSeconds);
  for (const SplitTiming &s : splits)
    best = std::min(best, s.timing.bestSeconds);
  return best;
}

bool DecodeResult::planWithin5Percent() const {
  return plan.bestSeconds <= 1.05 * bestSeconds();
}

unsigned DecodeResult::bestSplits() const {
  unsigned best = 1;
  double time = single.bestSeconds;
  for (const SplitTiming &s : splits)
    if (s.timing.bestSeconds < time) {
      time = s.timing.bestSeconds;
      best = s.numSplits;
    }
  return best;
}

bool DecodeResult::outputsAgree() const {
  return planRelL2 <= 2e-2 && llvm::all_of(splits, [](const SplitTiming &s) {
           return s.relL2 <= 2e-2;
         });
}

std::string fmhajit::bench::decodeSpecText(const char *family, unsigned d) {
  return std::string("family=") + family +
         ",dtype=bf16,d=" + std::to_string(d) + ",bm=16";
}

static llvm::Expected<KernelSpec> resolve(const std::string &text) {
  auto parsed = parseSpec(text);
  if (!parsed)
    return parsed.takeError();
  return validateSpec(*parsed);
}

namespace {
/// The row's buffers: Q, K, V, and an O per run to compare.
struct DecodeData {
  HostTensor q, k, v, single, split, planned;

  DecodeData(const AttentionProblem &p)
      : q(DType::BF16, numElements(p.qShape())),
        k(DType::BF16, numElements(p.kShape())),
        v(DType::BF16, numElements(p.vShape())),
        single(DType::BF16, numElements(p.oShape())),
        split(DType::BF16, numElements(p.oShape())),
        planned(DType::BF16, numElements(p.oShape())) {
    q.fillNormal(1);
    k.fillNormal(2);
    v.fillNormal(3);
  }
};

/// One split count's workspace and launch parameters.
struct SplitRun {
  unsigned numSplits;
  std::vector<float> oAccum, lseAccum;
  KernelArgs params;
};

double relL2(const HostTensor &a, const HostTensor &b) {
  std::vector<float> x = a.toFloat(), y = b.toFloat();
  std::vector<double> ref(y.begin(), y.end());
  return compareOutputs(x, ref, {}, {}, DType::BF16).relL2;
}
} // namespace

api::Problem fmhajit::bench::decodeProblem(const DecodeShape &shape,
                                           api::Device device) {
  api::Problem p;
  p.device = device;
  p.batch = shape.batch;
  p.headsQ = shape.headsQ;
  p.headsKv = shape.headsKv;
  p.seqlenQ = shape.seqlenQ;
  p.seqlenK = shape.seqlenK;
  p.headDim = shape.d;
  p.dtype = api::DType::BF16;
  return p;
}

std::vector<int32_t> fmhajit::bench::keyLengths(const DecodeShape &s) {
  std::vector<int32_t> lens(size_t(s.batch), int32_t(s.seqlenK));
  if (s.mixedMin <= 0)
    return lens;
  uint64_t x = uint64_t(s.batch);
  uint64_t span = uint64_t(s.seqlenK - s.mixedMin + 1);
  for (int32_t &len : lens) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    len = int32_t(s.mixedMin + int64_t((x >> 33) % span));
  }
  return lens;
}

int64_t fmhajit::bench::totalKeys(const DecodeShape &s) {
  int64_t total = 0;
  for (int32_t len : keyLengths(s))
    total += len;
  return total;
}

int64_t fmhajit::bench::pagesPerSeq(const DecodeShape &shape) {
  return (shape.seqlenK + shape.pageSize - 1) / shape.pageSize;
}

api::Problem fmhajit::bench::pagedDecodeProblem(const DecodeShape &shape,
                                                api::Device device,
                                                int64_t poolPages) {
  api::Problem p = decodeProblem(shape, device);
  std::vector<int32_t> lens = keyLengths(shape);
  if (shape.pageSize) {
    p.pagesKv = {shape.pageSize, poolPages, pagesPerSeq(shape)};
    p.seqlensK = lens;
    p.seqlenK = 0;
  } else if (shape.mixedMin > 0) { // varlen: packed [total, heads, d]
    p.cuSeqlensQ = p.cuSeqlensK = {0};
    for (int32_t len : lens) {
      p.cuSeqlensQ.push_back(p.cuSeqlensQ.back() + int32_t(shape.seqlenQ));
      p.cuSeqlensK.push_back(p.cuSeqlensK.back() + len);
    }
    p.seqlenQ = p.seqlenK = 0;
  }
  return p;
}

AttentionProblem
fmhajit::bench::decodeAttentionProblem(const DecodeShape &shape,
                                       const KernelSpec &spec) {
  AttentionProblem p = AttentionProblem::forSpec(spec);
  p.batch = shape.batch;
  p.headsQ = shape.headsQ;
  p.headsKv = shape.headsKv;
  p.seqlenQ = shape.seqlenQ;
  p.seqlenK = shape.seqlenK;
  return p;
}

static llvm::Expected<api::Plan> planRow(const DecodeShape &shape,
                                         unsigned threads) {
  api::Options options;
  options.threads = threads;
  api::Result<api::Plan> plan =
      api::plan(decodeProblem(shape, api::Device::Host), options);
  if (!plan.ok())
    return makeError(ErrorKind::Usage,
                     "api::plan: " + plan.status().toString());
  return *plan;
}

llvm::Expected<DecodeResult> fmhajit::bench::runDecodeRow(
    const DecodeShape &shape, std::vector<unsigned> candidates,
    HostExecutor &executor, KernelCache &cache, const TimingPolicy &policy) {
  auto singleSpec = resolve(decodeSpecText("fwd", shape.d));
  if (!singleSpec)
    return singleSpec.takeError();
  auto splitSpec = resolve(decodeSpecText("fwd_splitkv", shape.d));
  if (!splitSpec)
    return splitSpec.takeError();
  auto single = HostKernel::load(*singleSpec, cache);
  if (!single)
    return single.takeError();
  auto split = HostSplitKv::load(*splitSpec, cache);
  if (!split)
    return split.takeError();

  AttentionProblem p = decodeAttentionProblem(shape, *singleSpec);
  if (llvm::Error err = p.validate(*singleSpec))
    return std::move(err);
  DecodeData data(p);
  DecodeResult result;
  result.shape = shape;
  result.threads = executor.threads();
  auto plan = planRow(shape, executor.threads());
  if (!plan)
    return plan.takeError();
  result.planSplits = unsigned(plan->steps().front().keySplits);
  result.planKernel = plan->steps().front().kernel;

  KernelArgs singleParams = makeKernelArgs(
      *singleSpec, p,
      {data.q.data(), data.k.data(), data.v.data(), data.single.data()});
  data.planned.poison();
  api::Tensors tensors{data.q.data(), data.k.data(), data.v.data(),
                       data.planned.data()};
  api::Status status;

  if (result.planSplits > 1 &&
      !llvm::is_contained(candidates, result.planSplits))
    candidates.push_back(result.planSplits);
  llvm::sort(candidates);
  std::vector<SplitRun> runs;
  for (unsigned n : candidates)
    if (n > 1) {
      SplitKvWorkspaceSize size = splitKvWorkspaceSize(*splitSpec, p, n);
      runs.push_back({n,
                      std::vector<float>(size.oAccum, NAN),
                      std::vector<float>(size.lseAccum, NAN),
                      {}});
    }
  for (SplitRun &r :
       runs) // after the vector stops growing: params point into it
    r.params = makeSplitKvParams(
        *splitSpec, p,
        {data.q.data(), data.k.data(), data.v.data(), data.split.data()},
        r.numSplits, {r.oAccum.data(), r.lseAccum.data()});

  std::vector<std::function<void()>> contenders = {
      [&] { single->run(singleParams, executor); },
      [&] { status = api::run(*plan, tensors); }};
  for (SplitRun &r : runs)
    contenders.push_back([&] { split->run(r.params, executor); });
  std::vector<Timing> times = timeInterleaved(contenders, policy);
  if (!status.ok())
    return makeError(ErrorKind::Usage, "api::run: " + status.toString());
  result.single = times[0];
  result.plan = times[1];
  result.planRelL2 = relL2(data.planned, data.single);
  for (size_t i = 0; i < runs.size(); ++i) {
    data.split.poison(); // each count's own output, checked once more
    split->run(runs[i].params, executor);
    result.splits.push_back(
        {runs[i].numSplits, times[2 + i], relL2(data.split, data.single)});
  }
  return result;
}
