//===- SplitPlanner.h - Whether a decode-shaped problem runs split-KV -----===//
//
// A problem the dispatcher marks decode-shaped (few queries, many keys)
// runs split-KV when all of these hold, else the single-pass kernel, which
// is right at any shape:
//   - the workers are known: host threads, or the GPU's SMs (from its
//     driver; a GPU plan made without one stays single-pass);
//   - the dispatcher finds a fwd_splitkv kernel for the problem's features
//     (the same three rules, on family fwd_splitkv); a paged problem's
//     fwd_paged kernel takes the part count at run time, so it is its own
//     split kernel;
//   - chooseNumSplits (SplitHeuristic.h) gives more than one part for the
//     workers (the host's rule counts cache reuse too; a GPU's aims at
//     kGpuBlocksPerSm blocks per multiprocessor, up to kGpuMaxSplits parts).
// The combine kernel is combineSpecFor's. Every outcome is a note.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/Dispatcher.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/api/Registry.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct SplitChoice {
  Dispatch split;     ///< the fwd_splitkv (or fwd_paged) kernel and its rules
  KernelSpec combine; ///< the splitkv_combine kernel
  unsigned numSplits = 1;
};

/// The split plan for \p problem, whose single-pass dispatch is \p single,
/// or none; \p notes gets why. \p workers: splitWorkers (0: unknown).
llvm::Expected<std::optional<SplitChoice>>
chooseSplit(const LoweredProblem &problem, const Dispatch &single,
            const DispatchQuery &query, const Registry &registry,
            const DispatchTable &table, unsigned workers,
            std::vector<std::string> &notes);

} // namespace fmhajit
