//===- BenchTimer.h - Wall-clock timing: best and median of runs ----------===//
//
// A throughput figure is the best (shortest) of several runs after one
// warm-up run, like the FMA peak it is set against: on a shared machine
// noise only ever adds time, so the best run is the stable estimate of what
// the code costs. The median is kept beside it. The warm-up's time decides
// how many runs fit the case's time budget, so short cases get more runs and
// long ones at least minRuns.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <functional>
#include <vector>

namespace fmhajit::bench {

using Clock = std::chrono::steady_clock;

/// Seconds from \p start to now.
inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The median of \p values (the mean of the middle two for an even count);
/// 0 when empty.
double median(std::vector<double> values);

/// How many timed runs a measurement takes.
struct TimingPolicy {
  double budgetSeconds = 1.0; ///< timed runs stop adding up past this
  unsigned minRuns = 3;
  unsigned maxRuns = 9;
};

/// The result of timing one function.
struct Timing {
  double bestSeconds = 0;
  double medianSeconds = 0;
  unsigned runs = 0; ///< timed runs, warm-up excluded
};

/// Runs \p fn once to warm up, then as many times as \p policy allows, and
/// returns the best and the median time of the timed runs.
Timing timeRuns(const std::function<void()> &fn, const TimingPolicy &policy);

/// Times each of \p fns like timeRuns, but in turns: one warm-up call each,
/// then rounds that call every function once, so that a change in the
/// machine's speed (a neighbour's load, a frequency step) falls on all of
/// them alike instead of on whichever ran at that moment. The warm-ups'
/// total decides the rounds that fit \p policy's budget.
std::vector<Timing>
timeInterleaved(const std::vector<std::function<void()>> &fns,
                const TimingPolicy &policy);

} // namespace fmhajit::bench
