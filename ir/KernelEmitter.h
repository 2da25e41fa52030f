//===- KernelEmitter.h - Spec to LLVM module ------------------------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

/// Lowers a resolved spec to a module holding one kernel whose symbol is the
/// spec's encoded name. Features not implemented yet fail with an
/// Unsupported error naming them.
llvm::Expected<std::unique_ptr<llvm::Module>>
emitKernelModule(const KernelSpec &spec, llvm::LLVMContext &ctx,
                 const EmitOptions &options = {});

} // namespace fmhajit
