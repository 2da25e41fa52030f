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
// Where that count reaches the key tiles of the split kernel's tile (each
// part would hold one key tile), the dispatcher is asked again for the
// table's split tile (specs/dispatch/*.json "split_tiles": on sm_90a wgmma
// bn = 64 for up to 32 packed rows), and the parts are counted anew on its
// key tiles: with 1k-4k keys the bn = 128 tile runs out of key tiles before
// the GPU is full (docs/families.md#how-many-parts-choosenumsplits).
// Sequences of mixed key lengths (varlen or paged, not all equal) get a
// split schedule instead of numSplits even parts each (SplitSchedule.h):
// parts in proportion to each sequence's length, one list across the
// batch, even where the batch alone fills the workers.
// The combine kernel is combineSpecFor's. Every outcome is a note.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/Dispatcher.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/api/Registry.h"
#include "runtime/api/SplitSchedule.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct SplitChoice {
  Dispatch split;     ///< the fwd_splitkv (or fwd_paged) kernel and its rules
  KernelSpec combine; ///< the splitkv_combine kernel
  unsigned numSplits = 1; ///< under a schedule: every sequence's parts
  /// Set for a batch of mixed lengths: the parts of each sequence.
  std::shared_ptr<const SplitSchedule> schedule;
};

/// Each sequence's keys when \p problem gives them one by one (paged
/// seqlensK, varlen cuSeqlensK), else empty.
std::vector<int64_t> sequenceKeys(const LoweredProblem &problem);

/// The split schedule for \p problem run by \p split's kernel on
/// \p workers (0: unknown), or null (SplitSchedule.h says when).
std::shared_ptr<const SplitSchedule> scheduleFor(const LoweredProblem &problem,
                                                 const KernelSpec &split,
                                                 unsigned workers);

/// One line saying what \p schedule cuts, for a plan's decisions.
std::string describeSchedule(const SplitSchedule &schedule, int64_t bn);

/// The split plan for \p problem, whose single-pass dispatch is \p single,
/// or none; \p notes gets why. \p workers: splitWorkers (0: unknown).
llvm::Expected<std::optional<SplitChoice>>
chooseSplit(const LoweredProblem &problem, const Dispatch &single,
            const DispatchQuery &query, const Registry &registry,
            const DispatchTable &table, unsigned workers,
            std::vector<std::string> &notes);

/// The kernels a GPU plan may run in place of the split kernel \p split that
/// the registry gave: its TMA ring twin (stages=2), and unless \p split is
/// in the dispatch table's split tile (\p splitTile: the narrowed tile,
/// which runs only as its ring twin) that twin with keys as the products'
/// rows on m8 and m16 tiles, each where it validates; none for a split
/// kernel without a ring twin. Warm-ups compile them beside \p split
/// (ProfileWarmup.h), since chooseSplit picks among them by the problem's
/// shape.
std::vector<KernelSpec> splitTwins(const KernelSpec &split, bool splitTile);

} // namespace fmhajit
