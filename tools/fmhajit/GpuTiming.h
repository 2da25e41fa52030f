//===- GpuTiming.h - The median of event-timed GPU launches ---------------===//
//
// How `fmhajit run` times a GPU kernel, written once for every runtime
// whose kernel has launch(params, stream) and launchTimed(params, stream,
// timer), and whose stream has get() and synchronize(): a few warm-up
// launches (lazy loading, clocks ramping up), then the median of N timed
// launches, or of at least 10 and ~0.2 s of them without --iters.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "llvm/Support/Error.h"
#include <algorithm>
#include <chrono>
#include <vector>

namespace fmhajit {

inline constexpr unsigned kGpuWarmups = 3;
inline constexpr unsigned kGpuMinIterations = 10;
inline constexpr double kGpuTimingBudgetMs = 200;

/// The median milliseconds of \p kernel's launches; \p ran gets how many.
template <typename Kernel, typename Stream, typename Timer>
llvm::Expected<double> medianLaunchMs(const Kernel &kernel, const KernelArgs &params,
                                      const Stream &stream, Timer &timer,
                                      unsigned iterations, unsigned &ran) {
  for (unsigned i = 0; i < kGpuWarmups; ++i)
    if (llvm::Error err = kernel.launch(params, stream.get()))
      return std::move(err);
  if (llvm::Error err = stream.synchronize())
    return std::move(err);
  std::vector<double> times;
  auto begin = std::chrono::steady_clock::now();
  auto more = [&](unsigned i) {
    if (iterations)
      return i < iterations;
    std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - begin;
    return i < kGpuMinIterations || spent.count() < kGpuTimingBudgetMs;
  };
  for (unsigned i = 0; more(i); ++i) {
    auto ms = kernel.launchTimed(params, stream.get(), timer);
    if (!ms)
      return ms.takeError();
    times.push_back(*ms);
  }
  ran = static_cast<unsigned>(times.size());
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

} // namespace fmhajit
