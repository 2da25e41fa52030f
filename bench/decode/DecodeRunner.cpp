//===- DecodeRunner.cpp - One decode row: single-pass against split-KV ----===//
#include "bench/decode/DecodeRunner.h"
#include "runtime/Compare.h"
#include "runtime/HostKernel.h"
#include "runtime/HostTensor.h"
#include "runtime/SplitHeuristic.h"
#include "specs/SpecParser.h"
#include "specs/Validate.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <cmath>

using namespace fmhajit;
using namespace fmhajit::bench;

double DecodeResult::ruleSeconds() const {
  for (const SplitTiming &s : splits)
    if (s.numSplits == ruleSplits)
      return s.timing.bestSeconds;
  return single.bestSeconds;
}

double DecodeResult::bestSeconds() const {
  double best = single.bestSeconds;
  for (const SplitTiming &s : splits)
    best = std::min(best, s.timing.bestSeconds);
  return best;
}

double DecodeResult::bestSplitSeconds() const {
  double best = INFINITY;
  for (const SplitTiming &s : splits)
    best = std::min(best, s.timing.bestSeconds);
  return best;
}

bool DecodeResult::choiceWithin5Percent() const {
  double other = ruleSplits > 1 ? single.bestSeconds : bestSplitSeconds();
  return ruleSeconds() <= 1.05 * other;
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
  return llvm::all_of(splits, [](const SplitTiming &s) { return s.relL2 <= 2e-2; });
}

std::string fmhajit::bench::decodeSpecText(const char *family, unsigned d) {
  return std::string("family=") + family + ",dtype=bf16,d=" + std::to_string(d) + ",bm=16";
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
  HostTensor q, k, v, single, split;
  std::vector<float> oAccum, lseAccum;

  DecodeData(const AttentionProblem &p)
      : q(DType::BF16, numElements(p.qShape())), k(DType::BF16, numElements(p.kShape())),
        v(DType::BF16, numElements(p.vShape())), single(DType::BF16, numElements(p.oShape())),
        split(DType::BF16, numElements(p.oShape())) {
    q.fillNormal(1);
    k.fillNormal(2);
    v.fillNormal(3);
  }
};

double relL2(const HostTensor &a, const HostTensor &b) {
  std::vector<float> x = a.toFloat(), y = b.toFloat();
  std::vector<double> ref(y.begin(), y.end());
  return compareOutputs(x, ref, {}, {}, DType::BF16).relL2;
}
} // namespace

llvm::Expected<DecodeResult>
fmhajit::bench::runDecodeRow(const DecodeShape &shape, std::vector<unsigned> candidates,
                             HostExecutor &executor, KernelCache &cache,
                             const TimingPolicy &policy) {
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

  AttentionProblem p = AttentionProblem::forSpec(*singleSpec);
  p.batch = shape.batch;
  p.headsQ = shape.headsQ;
  p.headsKv = shape.headsKv;
  p.seqlenQ = 1;
  p.seqlenK = shape.seqlenK;
  if (llvm::Error err = p.validate(*singleSpec))
    return std::move(err);
  DecodeData data(p);
  DecodeResult result;
  result.shape = shape;
  result.threads = executor.threads();
  result.ruleSplits = chooseNumSplits(*splitSpec, p, executor.threads());

  FwdParams singleParams = makeFwdParams(*singleSpec, p, {data.q.data(), data.k.data(), data.v.data(), data.single.data()});
  result.single = timeRuns([&] { single->run(singleParams, executor); }, policy);

  if (result.ruleSplits > 1 && !llvm::is_contained(candidates, result.ruleSplits))
    candidates.push_back(result.ruleSplits);
  llvm::sort(candidates);
  for (unsigned n : candidates) {
    if (n <= 1)
      continue;
    SplitKvWorkspaceSize size = splitKvWorkspaceSize(*splitSpec, p, n);
    data.oAccum.assign(size.oAccum, NAN);
    data.lseAccum.assign(size.lseAccum, NAN);
    data.split.poison();
    FwdParams params = makeSplitKvParams(*splitSpec, p, {data.q.data(), data.k.data(), data.v.data(), data.split.data()},
                                         n, {data.oAccum.data(), data.lseAccum.data()});
    SplitTiming t;
    t.numSplits = n;
    t.timing = timeRuns([&] { split->run(params, executor); }, policy);
    t.relL2 = relL2(data.split, data.single);
    result.splits.push_back(t);
  }
  return result;
}
