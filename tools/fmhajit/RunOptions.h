//===- RunOptions.h - The flags of `fmhajit run` --------------------------===//
//
// `fmhajit run SPEC [flags]` is a client of the public API: the flags and
// the spec's features become an api::Problem (or, for append_kv, an
// api::AppendProblem), the spec itself pins the kernel (Options::kernel),
// and runtime/harness runs, checks, saves and times it (docs/run.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "specs/KernelSpec.h"
#include "tools/fmhajit/Args.h"
#include "tools/fmhajit/VariantFlag.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fmhajit {

struct RunRequest {
  KernelSpec spec; ///< as written (parsed, not yet resolved for a target)
  /// The call: an append for family append_kv, attention otherwise.
  api::Problem problem;
  api::AppendProblem append;
  api::Options options;
  uint64_t seed = 1;
  unsigned iterations = 0; ///< 0: enough for ~0.2 s
  bool check = false;
  bool numSplitsGiven = false; ///< --num-splits, for the `splits` line
  /// --descale: fp8 inputs' descale factors Q, K, V (else the harness's).
  std::optional<std::array<float, 3>> descales;
  std::optional<std::string> saveDir;
  /// dropout=1: p, seed and offset of the run (--dropout-p, --dropout-seed,
  /// --dropout-offset, or their defaults); unset without dropout.
  std::optional<api::Dropout> dropout;
  /// --variant-tensor: the variant's run-time tensors, in slot order.
  std::vector<VariantTensorFlag> variantTensors;
  /// Flags the spec's features rule out: reported with the API's
  /// refusals, each one line (exit 1).
  std::vector<std::string> specMismatches;

  bool isAppend() const { return spec.family == Family::AppendKv; }
  api::Device device() const {
    return isAppend() ? append.device : problem.device;
  }
};

/// The flags `fmhajit run` takes, for parsing and for `fmhajit help run`.
llvm::ArrayRef<OptionSpec> runFlags();

/// Parses `run SPEC [--batch B] ...`; usage errors name the flag.
llvm::Expected<RunRequest> parseRunOptions(llvm::ArrayRef<const char *> argv);

/// Runs a backward request (family bwd_dq_dk_dv): BackwardRunCommand.cpp.
int runBackward(const RunRequest &req);

} // namespace fmhajit
