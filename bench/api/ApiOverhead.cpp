//===- ApiOverhead.cpp - What api::run costs beyond the kernel ------------===//
#include "bench/api/ApiOverhead.h"
#include "compiler/KernelCache.h"
#include "fmhajit/Fmhajit.h"
#include "runtime/device/HostExecutor.h"
#include "runtime/device/HostKernel.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include <algorithm>
#include <chrono>
#include <functional>

using namespace fmhajit;
using namespace fmhajit::bench;
using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static double nsOf(const std::function<void()> &call) {
  Clock::time_point start = Clock::now();
  call();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

static api::Problem tinyProblem() {
  api::Problem p;
  p.seqlenQ = 1;
  p.seqlenK = 16;
  p.headDim = 64;
  p.dtype = api::DType::F32;
  return p;
}

namespace {
/// Inputs and outputs of the tiny problem (packed BSHD, as the plan's).
struct TinyData {
  std::vector<float> q = std::vector<float>(64, 0.1f),
                     k = std::vector<float>(16 * 64, 0.2f),
                     v = std::vector<float>(16 * 64, 0.3f),
                     o = std::vector<float>(64);
};
} // namespace

/// The plan, and the same kernel loaded directly, for the tiny problem.
struct Loaded {
  api::Plan plan;
  KernelSpec spec;
  HostKernel kernel;
};

static llvm::Expected<Loaded> loadBoth() {
  api::Options options;
  options.threads = 1;
  api::Result<api::Plan> plan = api::plan(tinyProblem(), options);
  if (!plan)
    return makeError(ErrorKind::Jit, plan.status().toString());
  auto spec = decodeName(plan->steps().front().kernel);
  if (!spec)
    return spec.takeError();
  auto cache = KernelCache::global();
  if (!cache)
    return cache.takeError();
  auto kernel = HostKernel::load(*spec, *cache);
  if (!kernel)
    return kernel.takeError();
  return Loaded{*plan, *spec, std::move(*kernel)};
}

// Each round times every path once per call index, in an order that
// rotates, so drift and ordering hit all paths alike; the overhead is the
// median of the per-call differences api - direct, which the kernel's own
// jitter (much larger than the overhead) cancels out of.
static OverheadResult timePaths(const std::vector<std::function<void()>> &calls,
                                const OverheadConfig &config) {
  std::vector<std::vector<double>> times(calls.size());
  std::vector<double> overheads;
  for (unsigned r = 0; r < config.rounds; ++r)
    for (unsigned c = 0; c < config.calls; ++c) {
      double ns[3];
      for (size_t i = 0; i < calls.size(); ++i) {
        size_t path = (i + c) % calls.size();
        ns[path] = nsOf(calls[path]);
      }
      for (size_t i = 0; i < calls.size(); ++i)
        times[i].push_back(ns[i]);
      overheads.push_back(ns[2] - ns[0]);
    }
  OverheadResult result;
  result.calls = config.calls;
  result.rounds = config.rounds;
  const char *names[] = {"direct", "executor", "api"};
  for (size_t i = 0; i < calls.size(); ++i)
    result.paths.push_back({names[i], median(times[i])});
  result.overheadNs = median(overheads);
  return result;
}

llvm::Expected<OverheadResult>
bench::measureApiOverhead(const OverheadConfig &config) {
  auto loaded = loadBoth();
  if (!loaded)
    return loaded.takeError();
  TinyData data;
  AttentionProblem problem = AttentionProblem::forSpec(loaded->spec);
  problem.seqlenK = 16;
  KernelArgs params = makeKernelArgs(
      loaded->spec, problem,
      {data.q.data(), data.k.data(), data.v.data(), data.o.data()});
  HostKernelFn fn = loaded->kernel.entry();
  int64_t items = workItems(loaded->spec, params);
  HostExecutor executor(1);
  api::Tensors tensors{data.q.data(), data.k.data(), data.v.data(),
                       data.o.data()};
  if (!api::run(loaded->plan, tensors).ok())
    return makeError(ErrorKind::Jit, "api::run failed on the tiny problem");
  OverheadResult result =
      timePaths({[&] { fn(&params, 0, items); },
                 [&] { loaded->kernel.run(params, executor); },
                 [&] { (void)api::run(loaded->plan, tensors); }},
                config);
  result.kernel = loaded->plan.steps().front().kernel;
  return result;
}
