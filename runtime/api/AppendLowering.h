//===- AppendLowering.h - A public AppendProblem in the library's terms ---===//
//
// plan(AppendProblem) works on a LoweredAppend: the append_kv feature spec
// (dtype, head dims, target), the run-time AppendKvProblem (KvCache.h) and
// each sequence's length before the append. lowerAppend() checks every
// field first and reports every problem at once, in the public names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "fmhajit/Append.h"
#include "runtime/numerics/KvCache.h"
#include "specs/KernelSpec.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace fmhajit {

struct LoweredAppend {
  KernelSpec features;     ///< family append_kv, dtype, d, dv, target
  AppendKvProblem problem; ///< validated against features
  std::vector<int32_t> seqlens;
  double rotaryBase = 10000.0;
  api::Device device = api::Device::Host;
};

RotaryForm toRotaryForm(api::Rotary rotary);

/// Checks \p problem for \p target (a known target of its device) and
/// lowers it.
llvm::Expected<LoweredAppend> lowerAppend(const api::AppendProblem &problem,
                                          const std::string &target);

/// \p append in one line, for Plan::describe().
std::string describeAppend(const LoweredAppend &append);

} // namespace fmhajit
