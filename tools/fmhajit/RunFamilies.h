//===- RunFamilies.h - `fmhajit run` for the multi-stage families ---------===//
//
// fwd_splitkv, splitkv_combine, fwd_paged and append_kv run on the host,
// each with its own data and check (docs/families.md), printing the lines of
// docs/run.md plus `combine` (the second kernel) and `splits` (the part
// count and where it came from).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "runtime/device/HostKernel.h"
#include "runtime/device/SplitKv.h"
#include "tools/fmhajit/RunOptions.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <vector>

namespace fmhajit {

/// Runs \p opt, whose spec has a multi-stage family, and returns the exit
/// code.
int runFamily(const RunOptions &opt);

// One per family; each returns the exit code.
int runSplitKv(const RunOptions &opt, KernelCache &cache);  ///< RunSplitKv.cpp
int runCombine(const RunOptions &opt, KernelCache &cache);  ///< RunSplitKv.cpp
int runPaged(const RunOptions &opt, KernelCache &cache);    ///< RunPaged.cpp
int runAppendKv(const RunOptions &opt, KernelCache &cache); ///< RunAppendKv.cpp

/// --num-splits, or chooseNumSplits(spec, problem, threads); prints the
/// `splits` line.
/// \p threads: the workers, host threads or a GPU's SMs (the spec's target
/// says which).
unsigned resolveNumSplits(const RunOptions &opt, const AttentionProblem &problem,
                          unsigned threads, llvm::raw_ostream &os);

/// Loads a split kernel and its combine, printing `kernel`, `combine` and
/// `load`.
llvm::Expected<HostSplitKv> loadSplitKv(const KernelSpec &spec, KernelCache &cache,
                                        llvm::raw_ostream &os);

/// The split-KV workspace of a run, poisoned with NaN.
struct RunWorkspace {
  std::vector<float> oAccum, lseAccum;

  explicit RunWorkspace(const SplitKvWorkspaceSize &size);
  SplitKvWorkspace pointers();
};

/// Prints `time` (median of timed calls) and, when \p flops > 0, `GFLOPS`;
/// \p bytes > 0 prints `GB/s` instead.
void printTiming(const RunOptions &opt, llvm::function_ref<void()> call,
                 unsigned threads, double flops, double bytes, llvm::raw_ostream &os);

/// The meta.json entries every family bundle starts with: spec, name,
/// dtype, heads and the run's seed.
std::vector<std::pair<std::string, llvm::json::Value>>
familyMetadata(const RunOptions &opt);

} // namespace fmhajit
