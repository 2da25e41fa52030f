//===- ForwardCase.h - One attention call on seeded inputs, checked -------===//
//
// The harness the CLI's `run`, the e2e tests and the benches share: seeded
// random inputs for an api::Problem in its own layouts (any strides; a
// paged problem gets pools whose pages are shuffled, with NaN in every row
// no sequence uses), outputs poisoned with NaN, one run of a plan through
// the public API (device copies on a GPU), the float64 reference's
// verdict, the run bundle, and repeated launches for timing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "runtime/numerics/Compare.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fmhajit {

struct LoweredProblem;

namespace harness {

class ForwardCase {
public:
  /// Lowers \p problem for \p target (the plan's) and makes its inputs
  /// from \p seed (Q, K, V from seed, seed + 1, seed + 2; the block table
  /// from seed + 3; under sink, the sinks the problem does not give from
  /// seed + 4; under bias, the bias from seed + 5, one element in eight
  /// -inf; under dropout, p = 0.25 and a seed and offset from seed, which
  /// setDropout() may change).
  static llvm::Expected<ForwardCase>
  make(const api::Problem &problem, const std::string &target, uint64_t seed);
  ForwardCase(ForwardCase &&);
  ForwardCase &operator=(ForwardCase &&);
  ~ForwardCase();

  /// Poisons O and LSE, runs \p plan once and leaves the outputs in host
  /// memory (on a GPU: fresh device copies of everything, then O and LSE
  /// copied back).
  llvm::Error run(const api::Plan &plan);
  /// Runs \p plan again on the buffers of the last run() without copying
  /// anything: what timing repeats. On a GPU it returns once launched.
  llvm::Error launch(const api::Plan &plan);

  /// The descale factors run() passes and check() applies: fp8 inputs'
  /// meaning (make() picks 0.5, 0.25 and 2 for fp8, 1 otherwise; the API
  /// refuses factors other than 1 for other dtypes).
  void setDescales(float q, float k, float v);

  /// Dropout's run-time arguments for run() and check() (a problem with
  /// Problem::dropout).
  void setDropout(const api::Dropout &dropout);

  /// The variant's run-time tensors, in slot order, for run() (device
  /// copies on a GPU), check() and save(): as many as the variant reads
  /// (the API refuses others).
  void setVariantTensors(std::vector<std::vector<float>> tensors);

  /// The float64 reference's verdict on the last run().
  CompareResult check() const;
  /// Writes the last run's bundle into \p dir (docs/run.md): q, k, v (or
  /// the pools), o, lse and meta.json, with \p kernel's spec and \p seed.
  llvm::Error save(const std::string &dir, const KernelSpec &kernel,
                   unsigned numSplits) const;

  /// 2 (d + dv) per visible (query, key) pair: the work of one run.
  double flops() const;
  const LoweredProblem &lowered() const;

  /// The buffers behind the case (the .cpp's).
  struct State;

private:
  explicit ForwardCase(std::unique_ptr<State> state);
  std::unique_ptr<State> s;
};

} // namespace harness
} // namespace fmhajit
