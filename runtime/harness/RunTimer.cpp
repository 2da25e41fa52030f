//===- RunTimer.cpp - The median time of repeated runs --------------------===//
#include "runtime/harness/RunTimer.h"
#include "runtime/device/GpuResources.h"
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
    double spent =
        std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
    return samples.size() < minimum || spent < kBudgetMs;
  }
  Timing median(const char *clock) {
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2,
                     samples.end());
    return {samples[samples.size() / 2], unsigned(samples.size()), clock};
  }
};
} // namespace

static llvm::Expected<Timing>
timeOnHost(unsigned iterations, llvm::function_ref<llvm::Error()> run) {
  Rounds rounds{iterations, 3};
  while (rounds.more()) {
    Clock::time_point start = Clock::now();
    if (llvm::Error err = run())
      return std::move(err);
    rounds.samples.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start)
            .count());
  }
  return rounds.median("wall clock");
}

static llvm::Expected<Timing> timeOnGpu(Backend backend, const char *clock,
                                        unsigned iterations,
                                        llvm::function_ref<llvm::Error()> run) {
  auto driver = gpuDriverFor(backend);
  if (!driver)
    return driver.takeError();
  auto timer = GpuTimer::create(*driver);
  if (!timer)
    return timer.takeError();
  for (unsigned i = 0; i < kGpuWarmups; ++i)
    if (llvm::Error err = run())
      return std::move(err);
  Rounds rounds{iterations, 10};
  while (rounds.more()) {
    auto ms = timedLaunch(*timer, GpuStreamHandle(nullptr), run);
    if (!ms)
      return ms.takeError();
    rounds.samples.push_back(*ms);
  }
  return rounds.median(clock);
}

llvm::Expected<Timing>
harness::timeRuns(api::Device device, unsigned iterations,
                  llvm::function_ref<llvm::Error()> run) {
  switch (device) {
  case api::Device::Host:
    return timeOnHost(iterations, run);
  case api::Device::Cuda:
    return timeOnGpu(Backend::Nvptx, "CUDA events", iterations, run);
  case api::Device::Hip:
    return timeOnGpu(Backend::Amdgpu, "HIP events", iterations, run);
  }
  return makeError(ErrorKind::Unsupported,
                   "timing runs on this device is not built yet");
}
