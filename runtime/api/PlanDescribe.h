//===- PlanDescribe.h - Plans and problems as text ------------------------===//
//
// What Plan::describe() and `fmhajit plan` print:
//
//   plan for target host (device host)
//   problem    batch 2, heads 8 q / 2 kv (GQA 4:1), seqlen q 128 / k 128, ...
//   step 1     forward fmha_fwd_bf16_d64_causal_m64n64w1s1_vector_host
//     grid       2 x 8 x 2 (batch x heads_q x query tiles of 64) = 32 work
//     items workspace  0 bytes why        the dispatcher's pick from the
//     registry
//   workspace  0 bytes
//   dispatch
//     1 features: ...
//   kernels    loaded through the kernel cache in ...
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/api/PlanState.h"
#include "runtime/api/ProblemLowering.h"
#include <string>

namespace fmhajit {

/// \p problem in one line.
std::string describeProblem(const LoweredProblem &problem);

/// \p plan as the lines above, each ending in '\n'.
std::string describePlan(const api::detail::PlanState &plan);

} // namespace fmhajit
