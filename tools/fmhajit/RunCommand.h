//===- RunCommand.h - The parts of `fmhajit run` every device shares ------===//
//
// `fmhajit run` makes seeded inputs on the host, runs the kernel once on
// poisoned outputs, checks and saves that run, then times it. The host path
// (RunCommand.cpp) and the CUDA path (RunCuda.cpp) share the host data, the
// FLOP count, the check and the bundle; each prints the same lines (see
// docs/run.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/device/HostKernel.h"
#include "runtime/numerics/HostTensor.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <vector>

namespace fmhajit {

/// Inputs, poisoned outputs and side arrays of one run, in host memory.
struct RunData {
  HostTensor q, k, v, o;
  std::vector<float> lse;
  std::vector<int32_t> cuQ, cuK;
  std::vector<float> slopes;

  explicit RunData(const RunOptions &opt);
  /// O and LSE back to NaN.
  void poison(const RunOptions &opt);
  /// Host pointers into this data.
  ForwardBuffers buffers();
};

/// FLOPs of the two products of \p opt's problem (the usual convention:
/// half the pairs under causal masks, the exact band under a window).
double forwardFlops(const RunOptions &opt);

/// Compares \p data's outputs with the float64 reference and prints the
/// `check` line; true on PASS.
bool checkOutputs(const RunOptions &opt, RunData &data, llvm::raw_ostream &os);

/// Writes the run bundle when --save was given and prints the `saved` line.
llvm::Error saveOutputs(const RunOptions &opt, RunData &data, llvm::raw_ostream &os);

/// Calls \p call \p iterations times (0: at least 3 and about 0.2 s) and
/// returns the median wall time in milliseconds; \p ran gets the count.
double medianCallMs(llvm::function_ref<void()> call, unsigned iterations,
                    unsigned &ran);

/// Runs \p opt (device cuda) and returns the exit code: RunCuda.cpp.
int runOnCuda(const RunOptions &opt);

/// Runs \p opt (device hip) and returns the exit code: RunHip.cpp.
int runOnHip(const RunOptions &opt);

} // namespace fmhajit
