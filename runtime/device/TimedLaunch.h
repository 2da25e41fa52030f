//===- TimedLaunch.h - GPU work between two timing events -----------------===//
//
// CUDA and HIP time a launch alike: record the start event, launch, record
// the stop event, wait for it. Written once over any timer with
// start(stream), stop(stream) and elapsedMs() (CudaTimer, HipTimer).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"

namespace fmhajit {

/// Runs \p launch (returning llvm::Error) between \p timer's events on
/// \p stream and waits: its milliseconds.
template <typename Timer, typename Stream, typename Launch>
llvm::Expected<float> timedLaunch(Timer &timer, Stream stream, Launch launch) {
  if (llvm::Error err = timer.start(stream))
    return std::move(err);
  if (llvm::Error err = launch())
    return std::move(err);
  if (llvm::Error err = timer.stop(stream))
    return std::move(err);
  return timer.elapsedMs();
}

} // namespace fmhajit
