//===- BenchTimer.cpp - Wall-clock timing: best and median for the host bench
//--===//
#include "bench/host/BenchTimer.h"
#include <algorithm>
#include <cmath>

using namespace fmhajit::bench;

double fmhajit::bench::median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid]
                           : 0.5 * (values[mid - 1] + values[mid]);
}

std::vector<Timing>
fmhajit::bench::timeInterleaved(const std::vector<std::function<void()>> &fns,
                                const TimingPolicy &policy) {
  Clock::time_point start = Clock::now();
  for (const auto &fn : fns)
    fn();
  double warmup = std::max(secondsSince(start), 1e-9);
  double fits = std::floor(policy.budgetSeconds / warmup);
  unsigned rounds = static_cast<unsigned>(
      std::clamp(fits, double(policy.minRuns), double(policy.maxRuns)));
  std::vector<std::vector<double>> times(fns.size());
  for (unsigned r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      start = Clock::now();
      fns[i]();
      times[i].push_back(secondsSince(start));
    }
  std::vector<Timing> out;
  for (std::vector<double> &t : times)
    out.push_back({*std::min_element(t.begin(), t.end()), median(t), rounds});
  return out;
}

Timing fmhajit::bench::timeRuns(const std::function<void()> &fn,
                                const TimingPolicy &policy) {
  return timeInterleaved({fn}, policy).front();
}
