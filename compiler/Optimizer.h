//===- Optimizer.h - The pass pipeline ------------------------------------===//
#pragma once

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace fmhajit {

/// Prepares \p m for \p tm (triple, data layout) and runs the new pass
/// manager's -O3 pipeline with the target's cost model.
void optimizeModule(llvm::Module &m, llvm::TargetMachine &tm);

} // namespace fmhajit
