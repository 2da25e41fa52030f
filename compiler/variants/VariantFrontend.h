//===- VariantFrontend.h - A variant's C++ to LLVM IR, by clang in-process ===//
//
// Runs clang's front end (CompilerInstance + EmitLLVMOnlyAction) on a
// variant held in memory, for one target triple, with no file system but
// the variant and fmhajit's prelude (the allowed math, docs/variants.md).
// The IR is left unoptimized (-O2 -disable-llvm-passes) so that
// VariantChecks sees calls and recursion as the user wrote them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace fmhajit {

/// The header every variant sees first: declarations of the allowed math.
llvm::StringRef variantPrelude();

/// clang's version, for the kernel fingerprint.
std::string clangVersion();

/// \p source, named \p fileName in messages, as IR for \p triple in \p ctx;
/// clang's errors and warnings (as errors) come back as one Variant error
/// whose text has file:line:col and the caret.
llvm::Expected<std::unique_ptr<llvm::Module>>
compileVariantSource(llvm::StringRef source, llvm::StringRef fileName,
                     llvm::StringRef triple, llvm::LLVMContext &ctx);

} // namespace fmhajit
