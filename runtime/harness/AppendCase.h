//===- AppendCase.h - One K/V cache append on seeded inputs, checked ------===//
//
// The append counterpart of ForwardCase.h: caches (paged with shuffled
// pages, or contiguous) whose first rows per sequence hold data and every
// other row NaN, seeded new rows (and Q when it is rotated), one append of
// a plan through the public API (device copies on a GPU), then every
// appended row checked against referenceAppendKv and every other cache
// element checked for unchanged bits (AppendKvCompare.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "runtime/numerics/AppendKvCompare.h"
#include "runtime/numerics/HostTensor.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <memory>
#include <string>

namespace fmhajit {

struct LoweredAppend;

namespace harness {

class AppendCase {
public:
  /// Lowers \p problem for \p target (the plan's) and makes its caches and
  /// rows from \p seed.
  static llvm::Expected<AppendCase> make(const api::AppendProblem &problem,
                                         const std::string &target,
                                         uint64_t seed);
  AppendCase(AppendCase &&);
  AppendCase &operator=(AppendCase &&);
  ~AppendCase();

  /// Restores the caches to their seeded contents, appends once with
  /// \p plan and leaves the caches (and rotated Q) in host memory.
  /// \p callerTables: pass the rotary tables in AppendTensors instead of
  /// using the plan's.
  llvm::Error run(const api::Plan &plan, bool callerTables = false);
  /// Appends again on the buffers of the last run() (the same rows are
  /// rewritten): what timing repeats.
  llvm::Error launch(const api::Plan &plan);

  /// The references' verdict on the last run().
  AppendKvCheck check() const;
  /// Writes the last run's bundle into \p dir (docs/families.md).
  llvm::Error save(const std::string &dir, const KernelSpec &kernel) const;

  /// Bytes one append moves: the new rows read, the cache rows written,
  /// Q both ways when rotated.
  double bytes() const;
  const LoweredAppend &lowered() const;
  /// The caches after the last run(): K, V and the block table (empty
  /// for contiguous caches), for attention over them.
  const HostTensor &kCache() const;
  const HostTensor &vCache() const;
  const std::vector<int32_t> &blockTable() const;

  /// The buffers behind the case (the .cpp's).
  struct State;

private:
  explicit AppendCase(std::unique_ptr<State> state);
  std::unique_ptr<State> s;
};

} // namespace harness
} // namespace fmhajit
