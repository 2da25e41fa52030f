//===- ApiOverhead.h - What api::run costs beyond the kernel --------------===//
//
// Host (measureApiOverhead): one tiny problem (Sq = 1, Sk = 16, one head,
// d = 64, fp32, one thread), whose kernel runs in well under a
// microsecond, called three ways in the same run, round-robin so that
// clock and cache drift hit each alike:
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
// CUDA (measureCudaOverhead, CudaOverhead.cpp): host time per call, the
// launches queued on one stream without waiting, for two bf16 problems
// planned for the GPU's target through the public API:
//
//   tiny  the problem above in bf16: a kernel without tensor maps
//   tma   Sq = Sk = 128: the plan's kernel loads by TMA (wgmma, stages 2
//         on sm_90a), so each launch needs three tensor maps
//
// each called the ways below, on device tensors from the runtime's own
// driver wrapper (GpuBuffer):
//
//   cuLaunchKernel  the driver's entry point (dlopen'ed), with the grid,
//                   KernelArgs and tensor maps made once
//   GpuKernel       GpuKernel::launch, the runtime's launch: grid, the
//                   KernelArgs copy, the maps encoded per call; for tma
//                   also with the maps bound (prepared once, the bases
//                   replaced per call: GpuTensorMaps.h)
//   api::run        on a cached, loaded plan
//
// A sample is the host time of `batch` calls of one path queued back to
// back, over batch; the stream is synchronized after each sample, outside
// the timing, so the launch queue never fills. The paths take turns sample
// by sample in a rotating order; a path's figure is its median sample, the
// overhead the median over sample indices of (api::run - cuLaunchKernel).
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
  double nsPerCall = 0; ///< median over every timed call (or sample)
};

struct OverheadResult {
  std::string kernel;
  unsigned calls = 0, rounds = 0;
  /// Host: direct, executor, api. CUDA: cuLaunchKernel first, api::run last.
  std::vector<PathTiming> paths;
  double overheadNs = 0; ///< median of the per-call (per-sample) last - first
  // CUDA only.
  std::string problem;     ///< "tiny" or "tma"
  std::string shape;       ///< "Sq=1, Sk=16, 1 head, d=64, bf16"
  bool tensorMaps = false; ///< the kernel loads by TMA
  double maxAbsDiff = 0;   ///< api::run's output against cuLaunchKernel's
};

/// Plans, loads and times the three host paths.
llvm::Expected<OverheadResult> measureApiOverhead(const OverheadConfig &config);

struct CudaOverheadConfig {
  unsigned batch = 100;  ///< calls queued per sample
  unsigned samples = 40; ///< per path per round
  unsigned rounds = 5;
  std::string target; ///< empty: the GPU's own
};

struct CudaOverheadReport {
  std::string gpu; ///< the driver's one-line description
  unsigned batch = 0;
  std::vector<OverheadResult> problems; ///< tiny, tma
};

/// Plans, loads and times the CUDA paths of both problems on the first
/// GPU; an ErrorKind::Driver error, and no crash, without a CUDA driver or
/// GPU.
llvm::Expected<CudaOverheadReport>
measureCudaOverhead(const CudaOverheadConfig &config);

} // namespace fmhajit::bench
