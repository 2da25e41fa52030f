//===- SplitPlanner.cpp - Whether a decode-shaped problem runs split-KV ---===//
#include "runtime/api/SplitPlanner.h"
#include "runtime/api/SplitHeuristic.h"
#include "runtime/device/SplitKv.h"
#include "specs/ArchTable.h"
#include "specs/EncodedName.h"
#include "specs/Errors.h"

using namespace fmhajit;

// fwd_paged cuts its key ranges itself (numSplits at run time), so its own
// pick is the split kernel; fwd asks the dispatcher for fwd_splitkv.
static llvm::Expected<Dispatch> splitDispatch(const Dispatch &single,
                                              const DispatchQuery &query,
                                              const Registry &registry,
                                              const DispatchTable &table) {
  if (single.chosen.family == Family::FwdPaged)
    return single;
  DispatchQuery splitQuery = query;
  splitQuery.features.family = Family::FwdSplitKv;
  splitQuery.tunedWinner.reset(); // autotuning measures the single pass
  return dispatch(splitQuery, registry, table);
}

llvm::Expected<std::optional<SplitChoice>>
fmhajit::chooseSplit(const LoweredProblem &l, const Dispatch &single,
                     const DispatchQuery &query, const Registry &registry,
                     const DispatchTable &table, unsigned workers,
                     std::vector<std::string> &notes) {
  if (!single.decodeShaped)
    return std::nullopt;
  if (l.features.dropout) {
    notes.push_back("decode-shaped, but split-KV is an inference kernel and "
                    "takes no dropout: single pass");
    return std::nullopt;
  }
  bool host = findArch(l.features.target)->backend == Backend::Host;
  if (workers == 0) {
    notes.push_back("decode-shaped, but split-KV is sized by the GPU's SM "
                    "count, which needs "
                    "its driver: single pass");
    return std::nullopt;
  }
  auto split = splitDispatch(single, query, registry, table);
  if (!split)
    return split.takeError();
  unsigned n = chooseNumSplits(split->chosen, l.problem, workers);
  std::string counts = "chooseNumSplits gives " + std::to_string(n) + " for " +
                       std::to_string(workers) + (host ? " worker" : " SM") +
                       (workers == 1 ? "" : "s");
  if (n <= 1) {
    notes.push_back(
        "decode-shaped, but " + counts +
        " (the work items already fill them, or the key range is too short to "
        "cut): single pass");
    return std::nullopt;
  }
  auto combine = combineSpecFor(split->chosen);
  if (!combine)
    return combine.takeError();
  notes.push_back("decode-shaped: split-KV, " + counts + ", combined by " +
                  encodeName(*combine));
  return SplitChoice{std::move(*split), *combine, n};
}
