//===- VariantCompiler.h - A variant's source to a checked module ---------===//
//
// The whole of turning a user's score_mod/mask_mod into code for one target:
// clang (VariantFrontend), the checks on the code as written, the entry
// points renamed to ir/Variant.h's symbols and every helper inlined into
// them, -O2, and the checks on the optimized code (VariantChecks). The
// result is what emitKernelModule links into a kernel.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "specs/ArchTable.h"
#include "specs/KernelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>

namespace fmhajit {

/// A variant as the user gave it.
struct VariantSource {
  std::string text;
  std::string file; ///< its name in messages ("examples/variants/alibi.cpp")
};

/// The content hash that names a variant in specs and kernel names: of the
/// text only, so the same code under another file name is the same variant.
VariantHash hashVariant(llvm::StringRef text);

/// \p source compiled and checked for \p triple in \p ctx: a module defining
/// kScoreModSymbol and/or kMaskModSymbol (ir/Variant.h) and nothing else.
llvm::Expected<std::unique_ptr<llvm::Module>>
compileVariant(const VariantSource &source, llvm::StringRef triple,
               llvm::LLVMContext &ctx);

/// The triple a variant is compiled for to join \p arch's kernels.
std::string variantTriple(const ArchInfo &arch);

} // namespace fmhajit
