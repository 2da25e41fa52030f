//===- Optimizer.h - The pass pipeline ------------------------------------===//
#pragma once

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace fmhajit {

/// Prepares \p m for \p tm (triple, data layout) and optimizes it with the
/// new pass manager: a short fixed pipeline for the host (its IR arrives
/// vectorized), -O3 less the passes that never change its kernels for
/// NVPTX, -O3 for AMDGPU; GPUs with the target's cost model.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);

} // namespace fmhajit
