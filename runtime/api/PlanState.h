//===- PlanState.h - What a public Plan holds -----------------------------===//
//
// A Plan is a shared pointer to one immutable PlanState: the launches as
// the user sees them (PlanStep), and, when loaded, one StepRunner per
// launch bound to its compiled kernel with every argument but the caller's
// pointers already in place, so run() is a few checks and the launches.
// An append plan holds one AppendRunner instead, which append() runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>
#include <vector>

namespace fmhajit {

/// One launch of a loaded plan.
class StepRunner {
public:
  virtual ~StepRunner() = default;
  /// Launches on \p tensors, which run() has checked.
  virtual llvm::Error run(const api::Tensors &tensors) const = 0;
};

/// The launch of a loaded append plan (plan(AppendProblem)).
class AppendRunner {
public:
  virtual ~AppendRunner() = default;
  /// Appends on \p tensors, which append() has checked.
  virtual llvm::Error run(const api::AppendTensors &tensors) const = 0;
};

/// The launches of a loaded backward plan (planBackward).
class BackwardRunner {
public:
  virtual ~BackwardRunner() = default;
  /// Runs the backward on \p tensors, which backward() has checked.
  virtual llvm::Error run(const api::BackwardTensors &tensors) const = 0;
};

} // namespace fmhajit

namespace fmhajit::api::detail {

struct PlanState {
  std::vector<PlanStep> steps;
  /// The loaded launches, in order (a runner may cover several steps);
  /// empty when not loaded.
  std::vector<std::unique_ptr<const fmhajit::StepRunner>> runners;
  /// An append plan: whether it is one, and its loaded launch (else null).
  bool isAppend = false;
  std::unique_ptr<const fmhajit::AppendRunner> appender;
  /// A backward plan: whether it is one, and its loaded launches.
  bool isBackward = false;
  std::unique_ptr<const fmhajit::BackwardRunner> backwarder;
  int64_t workspaceBytes = 0;
  std::string target;
  Device device = Device::Host;
  std::string problemText; ///< the problem in one paragraph, for describe()
  std::vector<std::string> decisions;
  std::vector<CandidateTiming> timings;
  std::string loadText; ///< how the kernels were loaded, for describe()
  // What run() requires of the caller's Tensors.
  bool needsLse = false;
  bool needsWorkspace =
      false; ///< a GPU plan with workspace (the host has its own)
  bool needsCuSeqlens = false; ///< a GPU varlen plan: device cu_seqlens
  bool needsSlopes = false;    ///< a GPU ALiBi plan: device slopes
  /// A sink plan on a GPU, or on the host without Problem::sinks.
  bool needsSinks = false;
  bool needsBias = false; ///< bias=elementwise: Tensors::bias
  bool dropout = false;   ///< Problem::dropout: Tensors::dropout applies
  bool needsBlockTable =
      false; ///< paged K/V: Tensors/AppendTensors::blockTable
  /// A GPU plan with paged K/V (Tensors::seqlensK), or a GPU append
  /// (AppendTensors::seqlens): the lengths the kernel reads, in device memory.
  bool needsDeviceLengths = false;
  bool needsQ = false;    ///< an append that rotates Q: q and qOut
  bool fp8Inputs = false; ///< Tensors::descale* apply (else they must be 1)
  /// The Tensors::variantTensors the variant reads: this many, in order.
  unsigned variantTensors = 0;
};

/// Why \p d cannot run with \p s (\p field names it in the message), or
/// null: p in [0, 1) for a dropout plan, 0 for any other.
inline const char *dropoutProblem(const PlanState &s, const Dropout &d) {
  if (!s.dropout && d.p != 0)
    return "dropout.p is set but the plan has no dropout: plan the problem "
           "with Problem::dropout = true, or leave p at 0";
  if (s.dropout && !(d.p >= 0 && d.p < 1))
    return "dropout.p must be in [0, 1): the probability of dropping a "
           "probability (0 keeps every one)";
  return nullptr;
}

/// The one way in and out of a Plan's state.
struct PlanAccess {
  static const PlanState *state(const Plan &plan) { return plan.state.get(); }
  static Plan make(std::shared_ptr<const PlanState> state) {
    Plan plan;
    plan.state = std::move(state);
    return plan;
  }
};

} // namespace fmhajit::api::detail
