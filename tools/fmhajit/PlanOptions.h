//===- PlanOptions.h - The flags of `fmhajit plan` ------------------------===//
//
// `fmhajit plan` describes a problem with flags (run's sizes, plus the
// features a spec would carry: --d --dtype --mask --lse ...) and prints the
// public API's plan for it. The flags become an api::Problem and
// api::Options, so the CLI plans exactly as a program would.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Fmhajit.h"
#include "tools/fmhajit/Args.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace fmhajit {

struct PlanRequest {
  api::Problem problem;
  api::Options options;
  bool backward = false; ///< --backward: api::planBackward instead
};

/// The flags `fmhajit plan` takes, for parsing and `fmhajit help plan`.
llvm::ArrayRef<OptionSpec> planFlags();

/// Parses the words after `plan`; usage errors name the flag.
llvm::Expected<PlanRequest> parsePlanOptions(llvm::ArrayRef<const char *> argv);

} // namespace fmhajit
