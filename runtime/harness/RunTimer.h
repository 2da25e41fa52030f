//===- RunTimer.h - The median time of repeated runs ----------------------===//
//
// Host runs are timed by the wall clock around each call (they return when
// the outputs are written). GPU runs are timed by driver events around each
// launch on the default stream, after three warm-up launches, so the time
// is the GPU's and not the host's launch overhead.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace fmhajit::harness {

struct Timing {
  double ms = 0;          ///< the median of one run
  unsigned runs = 0;      ///< how many were timed
  const char *clock = ""; ///< "wall clock", "CUDA events" or "HIP events"
};

/// Times \p run (one call of a plan on \p device): \p iterations times, or
/// when 0 at least 3 (host) / 10 (GPU) and about 0.2 s.
llvm::Expected<Timing> timeRuns(api::Device device, unsigned iterations,
                                llvm::function_ref<llvm::Error()> run);

} // namespace fmhajit::harness
