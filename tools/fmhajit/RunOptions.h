//===- RunOptions.h - The flags of `fmhajit run` --------------------------===//
#pragma once

#include "runtime/AttentionProblem.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace fmhajit {

struct RunOptions {
  KernelSpec spec; ///< resolved
  AttentionProblem problem; ///< validated against spec
  uint64_t seed = 1;
  unsigned threads = 0; ///< 0: every hardware thread
  unsigned iterations = 0; ///< 0: enough for ~0.2 s, at least 3
  bool check = false;
  std::optional<std::string> saveDir;
  std::string device = "host";
};

/// Parses `run SPEC [--batch B] ...`; usage errors name the flag.
llvm::Expected<RunOptions> parseRunOptions(llvm::ArrayRef<const char *> argv);

} // namespace fmhajit
