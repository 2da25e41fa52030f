//===- Autotune.cpp - Timing the candidates of a problem on this machine --===//
#include "runtime/api/Autotune.h"
#include "runtime/api/HostForwardStep.h"
#include "runtime/device/HostKernel.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <chrono>

using namespace fmhajit;
using Clock = std::chrono::steady_clock;

double fmhajit::medianOf(std::vector<double> times) {
  std::nth_element(times.begin(), times.begin() + times.size() / 2,
                   times.end());
  return times[times.size() / 2];
}

namespace {
/// Zeroed host buffers of a problem's sizes and layouts.
struct HostScratch {
  explicit HostScratch(const LoweredProblem &l) {
    const KernelSpec &s = l.features;
    auto bytes = [](const TensorShape &shape, const TensorStrides &strides,
                    DType t) {
      return size_t(spanElements(shape, strides)) * dtypeBytes(t);
    };
    q.resize(bytes(l.qShape, l.strides.q, s.dtype));
    k.resize(bytes(l.kShape, l.strides.k, s.dtype));
    v.resize(bytes(l.vShape, l.strides.v, s.dtype));
    o.resize(bytes(l.oShape, l.strides.o, s.outType()));
    if (s.lse)
      lse.resize(size_t(numElements(l.problem.lseShape())));
    sinks = sinksForTiming(l);
    bias.resize(size_t(biasSpanElements(l)));
  }
  ForwardBuffers buffers(const LoweredProblem &l) {
    return {q.data(),
            k.data(),
            v.data(),
            o.data(),
            lse.empty() ? nullptr : lse.data(),
            l.cuSeqlensQ.empty() ? nullptr : l.cuSeqlensQ.data(),
            l.cuSeqlensK.empty() ? nullptr : l.cuSeqlensK.data(),
            l.alibiSlopes.empty() ? nullptr : l.alibiSlopes.data(),
            sinks.empty() ? nullptr : sinks.data(),
            bias.empty() ? nullptr : bias.data(),
            timingVariantTensors(&zero)};
  }
  std::vector<uint8_t> q, k, v, o;
  std::vector<float> lse, sinks, bias;
  float zero = 0; ///< every variant tensor
};
} // namespace

static double timeHostKernel(const HostKernel &kernel, const KernelArgs &params,
                             HostExecutor &executor) {
  kernel.run(params, executor); // warm-up: caches, page faults
  std::vector<double> times;
  double total = 0;
  while (times.size() < TuningPolicy::kMinRuns ||
         (times.size() < TuningPolicy::kMaxRuns &&
          total < TuningPolicy::kBudgetMs)) {
    Clock::time_point start = Clock::now();
    kernel.run(params, executor);
    times.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start)
            .count());
    total += times.back();
  }
  return medianOf(times);
}

static llvm::Expected<std::vector<TunedTiming>>
timeHostCandidates(const std::vector<KernelSpec> &candidates,
                   const LoweredProblem &l, KernelCache &cache,
                   unsigned threads) {
  HostScratch scratch(l);
  std::shared_ptr<HostExecutor> executor = sharedHostExecutor(threads);
  std::vector<TunedTiming> out;
  for (const KernelSpec &spec : candidates) {
    auto kernel = HostKernel::load(spec, cache);
    if (!kernel)
      return kernel.takeError();
    KernelArgs params =
        makeKernelArgs(spec, l.problem, scratch.buffers(l), l.strides);
    out.push_back(
        {encodeName(spec), timeHostKernel(*kernel, params, *executor)});
  }
  return out;
}

llvm::Expected<std::vector<TunedTiming>>
fmhajit::timeCandidates(const std::vector<KernelSpec> &candidates,
                        const LoweredProblem &l, KernelCache &cache,
                        unsigned threads) {
  const ArchInfo &arch = *findArch(l.features.target);
  llvm::Expected<std::vector<TunedTiming>> timings =
      arch.backend == Backend::Host
          ? timeHostCandidates(candidates, l, cache, threads)
          : timeGpuCandidates(candidates, l, cache);
  if (timings)
    llvm::sort(*timings, [](const TunedTiming &a, const TunedTiming &b) {
      return a.ms != b.ms ? a.ms < b.ms : a.kernel < b.kernel;
    });
  return timings;
}
