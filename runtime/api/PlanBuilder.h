//===- PlanBuilder.h - From the dispatcher's choice to launches -----------===//
//
// A plan is a list of launches sharing one workspace. Single-pass forward
// (fwd, or fwd_paged over a paged cache) is one launch; split-KV
// (SplitPlanner.h) is two:
//
//   fwd_splitkv      grid batch x heads_q x query tiles x splits, writing
//   (or fwd_paged)   fp32 partial O and partial LSE into the workspace
//   splitkv_combine  grid batch x heads_q x query tiles, merging them into
//                    O (and LSE)
//
// Workspace slices start at 256-byte boundaries. The layout is decided
// first (what `fmhajit plan` prints), loading second: only plans that will
// run need compiled kernels. One runner may cover several launches (the
// two split-KV launches share their partials).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/KernelCache.h"
#include "runtime/api/Dispatcher.h"
#include "runtime/api/HostSplitStep.h"
#include "runtime/api/PlanState.h"
#include "runtime/api/ProblemLowering.h"
#include "runtime/api/SplitPlanner.h"
#include "runtime/device/TailSplit.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

class GpuKernel;

/// One launch before loading.
struct StepLayout {
  KernelSpec spec;
  std::string role;
  int64_t workItems = 0;
  int64_t keySplits = 1;
  std::string grid;
  int64_t workspaceOffset = 0, workspaceBytes = 0;
  std::string why;
};

/// The launches of a plan and the workspace they share.
struct PlanLayout {
  std::vector<StepLayout> steps;
  int64_t workspaceBytes = 0;
  std::optional<SplitChoice> split;    ///< set for split-KV plans
  SplitWorkspaceLayout splitWorkspace; ///< where split-KV's partials go
  /// A single kernel's last round cut by keys (TailSplit.h), and where its
  /// counters and partials start in the workspace (bytes).
  TailSplit tail;
  int64_t tailOffset = 0;
};

/// Workspace slices start at multiples of this many bytes.
inline constexpr int64_t kWorkspaceAlignment = 256;

/// \p bytes rounded up to kWorkspaceAlignment.
int64_t alignWorkspace(int64_t bytes);

/// Appends \p step, giving it the next aligned slice of its workspaceBytes.
void addStep(PlanLayout &layout, StepLayout step);

/// The launches of \p problem: \p split's two when set, else \p single's.
PlanLayout layoutPlan(const LoweredProblem &problem, const Dispatch &single,
                      std::optional<SplitChoice> split);

/// How loadPlan loads.
struct LoadChoices {
  unsigned threads = 0;      ///< host workers
  bool blockSparsity = true; ///< build block maps (BlockSparsity.h)
};

/// Compiles (through \p cache) and loads \p layout's kernels for
/// \p problem's device, ready to run as \p choices say; \p loads gets how
/// each step's kernel was loaded, in step order, and \p decisions a line
/// for the block map when the plan has one.
llvm::Expected<std::vector<std::unique_ptr<const StepRunner>>>
loadPlan(const PlanLayout &layout, const LoweredProblem &problem,
         KernelCache &cache, LoadChoices choices,
         std::vector<api::StepLoad> &loads,
         std::vector<std::string> &decisions);

/// How \p kernel was loaded, as a plan step reports it (api::StepLoad).
api::StepLoad gpuStepLoad(const GpuKernel &kernel);

} // namespace fmhajit
