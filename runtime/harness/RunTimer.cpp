//===- RunTimer.cpp - The median time of repeated runs --------------------===//
#include "runtime/harness/RunTimer.h"
#include "runtime/device/CudaResources.h"
#include "runtime/device/TimedLaunch.h"
#include "specs/Errors.h"
#include <algorithm>
#include <chrono>
#include <vector>

using namespace fmhajit;
using namespace fmhajit::harness;
using Clock = std::chrono::steady_clock;

namespace {
constexpr unsigned kGpuWarmups = 3;
constexpr double kBudgetMs = 200;

/// Keeps asking for samples until \p iterations, or until both the
/// minimum count and the time budget are reached.
struct Rounds {
  unsigned iterations, minimum;
  Clock::time_point begin = Clock::now();
  std::vector<double> samples;

  bool more() const {
    if (iterations)
      return samples.size() < iterations;
    double spent = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
    return samples.size() < minimum || spent < kBudgetMs;
  }
  Timing median(const char *clock) {
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    return {samples[samples.size() / 2], unsigned(samples.size()), clock};
  }
};
} // namespace

static llvm::Expected<Timing> timeOnHost(unsigned iterations,
                                         llvm::function_ref<llvm::Error()> run) {
  Rounds rounds{iterations, 3};
  while (rounds.more()) {
    Clock::time_point start = Clock::now();
    if (llvm::Error err = run())
      return std::move(err);
    rounds.samples.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return rounds.median("wall clock");
}

static llvm::Expected<Timing> timeOnCuda(unsigned iterations,
                                         llvm::function_ref<llvm::Error()> run) {
  auto driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  auto timer = CudaTimer::create(*driver);
  if (!timer)
    return timer.takeError();
  for (unsigned i = 0; i < kGpuWarmups; ++i)
    if (llvm::Error err = run())
      return std::move(err);
  Rounds rounds{iterations, 10};
  while (rounds.more()) {
    auto ms = timedLaunch(*timer, cuda::CUstream(nullptr), run);
    if (!ms)
      return ms.takeError();
    rounds.samples.push_back(*ms);
  }
  return rounds.median("CUDA events");
}

llvm::Expected<Timing> harness::timeRuns(api::Device device, unsigned iterations,
                                         llvm::function_ref<llvm::Error()> run) {
  if (device == api::Device::Host)
    return timeOnHost(iterations, run);
  if (device == api::Device::Cuda)
    return timeOnCuda(iterations, run);
  return makeError(ErrorKind::Unsupported, "timing runs on this device is not built yet");
}
