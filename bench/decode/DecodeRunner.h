//===- DecodeRunner.h - One decode row: single-pass against split-KV ------===//
//
// A decode row is one problem (batch, Hq, Hkv, Sq = 1, Sk, d) with seeded
// bf16 inputs, timed on the same HostExecutor and the same buffers as
//   - the single-pass kernel (family fwd) and
//   - split-KV (fwd_splitkv + splitkv_combine) at each candidate part
//     count, chooseNumSplits' own count among them,
// so every figure of the row is measured in the same run. Each split run's
// O is compared with the single-pass O (relative L2), which catches a
// broken combine before its speed is reported.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/host/BenchTimer.h"
#include "compiler/KernelCache.h"
#include "runtime/HostExecutor.h"
#include "runtime/SplitKv.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit::bench {

struct DecodeShape {
  int64_t batch = 1, headsQ = 8, headsKv = 1, seqlenK = 1024;
  unsigned d = 128;
};

/// The timing of one split count.
struct SplitTiming {
  unsigned numSplits = 1;
  Timing timing;
  double relL2 = 0; ///< O against the single-pass kernel's
};

struct DecodeResult {
  DecodeShape shape;
  unsigned threads = 1;
  Timing single;                 ///< the fwd kernel
  std::vector<SplitTiming> splits; ///< in increasing part count
  unsigned ruleSplits = 1;       ///< chooseNumSplits' count (1: single pass)

  /// The time of the rule's choice: single-pass when it chose 1.
  double ruleSeconds() const;
  /// The fastest time of the row, single-pass or any split count.
  double bestSeconds() const;
  /// The part count of the fastest time (1: single pass).
  unsigned bestSplits() const;
  /// The fastest split time of the row, over every count timed.
  double bestSplitSeconds() const;
  /// The test, split-KV against single-pass: the rule's choice is
  /// the faster of the two, or within 5% of the other. The other is the
  /// single pass when the rule splits, and the best split count when it
  /// does not (the strongest split contender).
  bool choiceWithin5Percent() const;
  /// Every split run matched the single-pass output.
  bool outputsAgree() const;
};

/// The two specs a decode row runs: `family=<family>,dtype=bf16,d=<d>,bm=16`.
std::string decodeSpecText(const char *family, unsigned d);

/// Runs one row: loads the kernels through \p cache, then times the
/// single-pass kernel and every count of \p candidates (the rule's count is
/// added when missing) with \p policy.
llvm::Expected<DecodeResult> runDecodeRow(const DecodeShape &shape,
                                          std::vector<unsigned> candidates,
                                          HostExecutor &executor, KernelCache &cache,
                                          const TimingPolicy &policy);

} // namespace fmhajit::bench
