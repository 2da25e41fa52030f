//===- TuningKnobs.h - Launch settings read from the environment ----------===//
//
// FMHAJIT_* variables that change how a launch runs a kernel (never what it
// computes), for measurement and tests: docs/bench.md lists them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <cstdlib>

namespace fmhajit {

/// The value of tuning knob \p name, an integer >= 0, or -1 where it is
/// unset or not one.
inline int64_t knobFromEnvironment(const char *name) {
  const char *text = std::getenv(name);
  int64_t value = -1;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) || value < 0)
    return -1;
  return value;
}

} // namespace fmhajit
