//===- TuningStore.h - Autotuning winners, remembered on disk -------------===//
//
// Autotuning times every rule-1 candidate once; the winner is kept in one
// small JSON file per (target, problem bucket) under <kernel cache>/tuning/,
// written atomically (writeCacheFile: a temporary file renamed into place).
// A file holds its full bucket key and the kernel fingerprint it was
// measured with: a hash collision or a rebuilt fmhajit reads as a miss, and
// the next autotuned plan measures again.
//
// Bucket: target, features, and the sizes rounded up to powers of two:
// seqlen_q, seqlen_k (longest sequence), batch x heads_q, and the host
// thread count. Problems in one bucket share a winner.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/ProblemLowering.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct TunedTiming {
  std::string kernel;
  double ms = 0;
};

struct TuningRecord {
  std::string winner;
  std::vector<TunedTiming> timings; ///< fastest first
};

/// The bucket key of \p problem run with \p threads host threads.
std::string tuningBucket(const LoweredProblem &problem, unsigned threads);

class TuningStore {
public:
  /// Records under \p cacheDir/tuning for kernels built with \p fingerprint.
  TuningStore(std::string cacheDir, std::string fingerprint)
      : dir(std::move(cacheDir) + "/tuning"),
        fingerprint(std::move(fingerprint)) {}

  /// The record of \p bucket, if one was stored with this fingerprint.
  std::optional<TuningRecord> load(llvm::StringRef bucket) const;
  /// Stores \p record for \p bucket, replacing any other atomically.
  llvm::Error save(llvm::StringRef bucket, const TuningRecord &record) const;
  /// The file that holds \p bucket's record.
  std::string pathFor(llvm::StringRef bucket) const;

private:
  std::string dir;
  std::string fingerprint;
};

} // namespace fmhajit
