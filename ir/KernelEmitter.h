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
/// Unsupported error naming them. A spec with a variant needs \p variant,
/// the module compiler/variants/ made of its source in \p ctx
/// (ir/Variant.h); it is linked in and inlined where the recipe applies
/// its score modifiers.
llvm::Expected<std::unique_ptr<llvm::Module>>
emitKernelModule(const KernelSpec &spec, llvm::LLVMContext &ctx,
                 const EmitOptions &options = {},
                 std::unique_ptr<llvm::Module> variant = nullptr);

} // namespace fmhajit
