//===- fmhajit/Fmhajit.h - The public C++ API of fmhajit ------------------===//
//
// Describe a problem, plan it once, run it many times:
//
//   fmhajit::api::Problem p;            // shapes, dtypes, layouts, mask...
//   auto plan = fmhajit::api::plan(p);  // chooses and compiles the kernels
//   if (!plan) { report(plan.status().message()); return; }
//   fmhajit::api::Status s = fmhajit::api::run(*plan, {q, k, v, o});
//
// Appends to a K/V cache (Append.h) are planned the same way and run with
// append(): a decode step is append(appendPlan, ...) then run(plan, ...).
//
// plan() picks the kernel(s) by the dispatcher's documented rules (exact
// feature match, the target's tile table by head dim and query length, then
// the pipeline priority; docs/api.md), compiles them through the kernel
// cache and keeps them loaded, so run() only fills in pointers and launches.
// A Plan is immutable and may be run from several threads at once.
//
// This header and those it includes use only the standard library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Append.h"
#include "fmhajit/Backward.h"
#include "fmhajit/Problem.h"
#include "fmhajit/Specs.h"
#include "fmhajit/Status.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fmhajit::api {

struct Options {
  /// The fmhajit target to compile for: "host", "x86-64-v4", "sm_90a"...
  /// Empty: "host" on Device::Host, the GPU's own target on Device::Cuda
  /// and Device::Hip (HIP's needs ROCm 6 to report its gfx name).
  std::string target;
  /// Host worker threads; 0: one per hardware thread.
  unsigned threads = 0;
  /// Compile and load the kernels now (a plan must be loaded to run).
  /// false only chooses them: plans for targets this machine cannot run.
  bool load = true;
  /// Time every kernel that passes the feature rule once on this machine,
  /// keep the fastest, and remember it on disk for this problem's bucket.
  bool autotune = false;
  /// The kernel cache directory; empty: $FMHAJIT_CACHE_DIR, else
  /// $XDG_CACHE_HOME/fmhajit, else ~/.cache/fmhajit (docs/cache.md).
  std::string cacheDir;
  /// Run this kernel instead of the dispatcher's pick: a spec
  /// ("family=fwd,dtype=bf16,d=128,bm=64") or an encoded name. Its
  /// features must be the problem's; a spec left at target host takes the
  /// plan's target. family=fwd_splitkv (or fwd_paged) runs split-KV.
  std::string kernel;
  /// Key splits of a pinned fwd_splitkv or fwd_paged kernel; 0: the plan's
  /// rule for this machine (docs/api.md).
  unsigned numSplits = 0;
  /// planBackward: bitwise-reproducible gradients (spec key deterministic=1).
  /// The host always is; on a GPU this gives dQ one writer per element
  /// instead of fp32 atomic adds, at some cost in speed (docs/design.md).
  bool deterministic = false;
  /// Block sparsity for a variant with mask_mod (docs/variants.md): skip
  /// the key tiles mask_mod hides from a whole query tile, and skip
  /// mask_mod on tiles it shows whole. false walks every tile of the mask's
  /// range with mask_mod on each element (same kernel, same results; for
  /// measuring what the map saves).
  bool blockSparsity = true;
};

/// How one kernel of a plan was loaded (set when Options::load was).
struct StepLoad {
  /// Where its code came from: "compiled", "disk" or "memory" (the kernel
  /// cache, docs/cache.md); empty when the plan was not loaded.
  std::string origin;
  double codegenMs = 0; ///< spec -> code, or the cache lookup, plus linking
  double driverMs = 0;  ///< GPU: the driver's compile of the code (0: reused)
  /// GPU: what the driver reports of the kernel (0 on the host).
  int registers = 0, localBytes = 0, sharedBytes = 0, blockThreads = 0;
};

/// One kernel launch of a plan.
struct PlanStep {
  std::string kernel;    ///< the kernel's encoded name (docs/names.md)
  std::string role;      ///< "forward", "split-KV forward", "combine", ...
  int64_t workItems = 0; ///< host work items, or GPU blocks
  int64_t keySplits =
      1;            ///< parts each query tile's keys are cut into (split-KV)
  std::string grid; ///< what the work items are, in words
  int64_t workspaceOffset = 0, workspaceBytes = 0;
  std::string why; ///< why this kernel, in one line
  StepLoad load;
};

/// What autotuning measured for one candidate.
struct CandidateTiming {
  std::string kernel;
  double ms = 0; ///< median time of one call
};

namespace detail {
struct PlanState;
struct PlanAccess;
} // namespace detail

/// The kernels chosen for a problem, compiled and loaded when
/// Options::load was set. Copies share the same kernels.
class Plan {
public:
  /// An empty plan; run() refuses it.
  Plan();
  ~Plan();
  Plan(const Plan &);
  Plan &operator=(const Plan &);

  /// The launches of one run(), in order.
  const std::vector<PlanStep> &steps() const;
  /// Bytes of Tensors::workspace one run() needs (0: none). On the host a
  /// null Tensors::workspace takes a per-thread buffer fmhajit keeps.
  int64_t workspaceBytes() const;
  /// The target the kernels are compiled for.
  const std::string &target() const;
  Device device() const;
  /// Whether its kernels are loaded (Options::load was set), so that run(),
  /// append() or backward(), whichever the plan is for, can execute it.
  bool loaded() const;
  /// Each dispatcher rule's outcome, one line each.
  const std::vector<std::string> &decisions() const;
  /// Autotuning's measurements, fastest first (empty without autotune, or
  /// when a stored winner was reused).
  const std::vector<CandidateTiming> &timings() const;
  /// The whole plan as text: problem, kernels, grids, workspace, and why.
  std::string describe() const;
  /// The Tensors::variantTensors run() takes: one past the highest slot
  /// the problem's variant reads with fmhajit_tensor (0: none).
  int variantTensorCount() const;

private:
  friend struct detail::PlanAccess;
  std::shared_ptr<const detail::PlanState> state;
};

/// Chooses the kernels for \p problem and, with Options::load, compiles and
/// loads them. Fails with InvalidArgument naming what to change when the
/// problem is inconsistent or not supported by the target.
Result<Plan> plan(const Problem &problem, const Options &options = {});

/// Runs \p plan on \p tensors: on the host it returns when the outputs are
/// written; on a GPU it is asynchronous on the stream.
Status run(const Plan &plan, const Tensors &tensors);

/// Chooses and (with Options::load) loads the append_kv kernel for
/// \p problem. Fails with InvalidArgument naming what to change.
Result<Plan> plan(const AppendProblem &problem, const Options &options = {});

/// Runs an append plan on \p tensors; returns when the rows are written.
/// A plan of a Problem is refused here, as an append plan is by run().
Status append(const Plan &plan, const AppendTensors &tensors);

/// Chooses and (with Options::load) loads the backward's kernels for
/// \p problem, the Problem its forward ran (Backward.h): bwd_dot_do_o, then
/// bwd_dq_dk_dv. Host only so far; Options::kernel may pin the
/// bwd_dq_dk_dv kernel (e.g. its tile). Fails with InvalidArgument naming
/// what to change.
Result<Plan> planBackward(const Problem &problem, const Options &options = {});

/// Runs a backward plan on \p tensors; returns when dQ, dK and dV are
/// written. Plans of a forward or an append are refused here, and a
/// backward plan by run() and append().
Status backward(const Plan &plan, const BackwardTensors &tensors);

/// Compiles every kernel of \p profile ("smoke", "prefill", "decode", ...:
/// specs/profiles) for \p target into the kernel cache of \p cacheDir
/// (empty: as in Options), so that later plans find them compiled.
Status warmup(const std::string &profile, const std::string &target,
              const std::string &cacheDir = "");

} // namespace fmhajit::api
