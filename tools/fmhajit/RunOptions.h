//===- RunOptions.h - The flags of `fmhajit run` --------------------------===//
#pragma once

#include "runtime/numerics/AttentionProblem.h"
#include "runtime/numerics/KvCache.h"
#include "runtime/numerics/Rotary.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace fmhajit {

class Args;

/// The flags of the multi-stage families (docs/families.md); each family
/// takes only its own.
struct FamilyOptions {
  unsigned numSplits = 0; ///< --num-splits; 0: chooseNumSplits' choice
  KvCacheLayout cache;    ///< from --page-size and the lengths
  std::vector<int64_t> cacheLens; ///< --cache-len (or --seqlen-k each)
  AppendKvProblem append; ///< append_kv: --new-tokens, --rotary, ...
};

struct RunOptions {
  KernelSpec spec; ///< resolved
  AttentionProblem problem; ///< validated against spec
  uint64_t seed = 1;
  unsigned threads = 0; ///< 0: every hardware thread
  unsigned iterations = 0; ///< 0: enough for ~0.2 s, at least 3
  bool check = false;
  std::optional<std::string> saveDir;
  std::string device = "host";
  FamilyOptions family;
};

/// \p text of flag --\p flag as comma-separated whole numbers from \p min
/// to 2^30.
llvm::Expected<std::vector<int64_t>> parseList(llvm::StringRef flag,
                                               llvm::StringRef text, int64_t min);

/// Reads the family flags of \p args into \p opt (spec and sizes read
/// already): rejects flags the family does not take, sets the problem's
/// batch and key length from --cache-len, lays out the cache and validates
/// the family's problem. RunFamilyOptions.cpp.
llvm::Error readFamilyFlags(const Args &args, RunOptions &opt);

/// Parses `run SPEC [--batch B] ...`; usage errors name the flag.
llvm::Expected<RunOptions> parseRunOptions(llvm::ArrayRef<const char *> argv);

} // namespace fmhajit
