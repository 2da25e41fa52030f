//===- ApiOverhead.h - What api::run costs beyond the kernel --------------===//
//
// One tiny problem (Sq = 1, Sk = 16, one head, d = 64, fp32, one thread),
// whose kernel runs in well under a microsecond, called three ways in the
// same run, round-robin so that clock and cache drift hit each alike:
//
//   direct    the kernel's function pointer: fn(&params, 0, items)
//   executor  HostKernel::run through a one-thread HostExecutor
//   api       api::run(plan, tensors) on a cached, loaded plan
//
// Every call is timed on its own; for each call index the three paths run
// back to back in a rotating order. A path's figure is its median ns per
// call; the overhead is the median over call indices of (api - direct),
// which cancels the kernel's own jitter (far larger than the overhead).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit::bench {

struct OverheadConfig {
  unsigned calls = 20000; ///< per path per round
  unsigned rounds = 5;
};

struct PathTiming {
  std::string name;
  double nsPerCall = 0; ///< median over every timed call
};

struct OverheadResult {
  std::string kernel;
  unsigned calls = 0, rounds = 0;
  std::vector<PathTiming> paths; ///< direct, executor, api
  double overheadNs = 0;         ///< median of the per-call api - direct
};

/// Plans, loads and times the three paths.
llvm::Expected<OverheadResult> measureApiOverhead(const OverheadConfig &config);

} // namespace fmhajit::bench
