//===- GpuForwardLaunch.h - A forward call's kernels on one stream --------===//
//
// A forward call on a GPU is one kernel (fwd, fwd_splitkv, fwd_paged) and,
// when it cuts key ranges into several parts, splitkv_combine after it on
// the same stream (SplitKv.h). The plan's runner, `fmhajit run` and the
// decode benchmark all launch and time the pair through this one piece.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/GpuKernel.h"
#include <optional>

namespace fmhajit {

struct GpuForwardLaunch {
  GpuKernel kernel;
  std::optional<GpuKernel> combine; ///< when params.numSplits > 1

  /// The kernel, then the combine (its numQTiles from its own bm);
  /// asynchronous. \p maps: the kernel's prepared tensor maps, if any
  /// (GpuKernel::prepareTensorMaps).
  llvm::Error launch(const KernelArgs &params, GpuStreamHandle stream,
                     const TensorMaps *maps = nullptr) const;
  /// Both between \p timer's events, and waits: their milliseconds.
  llvm::Expected<float> launchTimed(const KernelArgs &params,
                                    GpuStreamHandle stream,
                                    GpuTimer &timer) const;
};

} // namespace fmhajit
