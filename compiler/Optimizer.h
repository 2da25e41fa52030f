//===- Optimizer.h - The pass pipeline ------------------------------------===//
#pragma once

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace fmhajit {

/// Prepares \p m for \p tm (triple, data layout) and optimizes it with the
/// new pass manager: a short fixed pipeline for the host (its IR arrives
/// vectorized), -O3 with the target's cost model for GPUs.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);

} // namespace fmhajit
