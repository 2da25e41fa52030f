//===- VariantCompiler.h - A variant's source to a checked module ---------===//
//
// The whole of turning a user's score_mod/mask_mod into code for one target:
// clang (VariantFrontend), the checks on the code as written, entry points
// under ir/Variant.h's symbols (the user's functions plus the tensor table
// argument) with every helper inlined into them, -O2, the checks on the
// optimized code (VariantChecks), and fmhajit_tensor's calls made bounded
// loads (ir/VariantTensorReads.h). The result is what emitKernelModule
// links into a kernel and what HostVariant runs on the CPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/variants/VariantTensorUse.h"
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

/// A variant compiled for one target.
struct CompiledVariant {
  /// Defines kScoreModSymbol and/or kMaskModSymbol (ir/Variant.h) and
  /// nothing else.
  std::unique_ptr<llvm::Module> module;
  /// The tensor slots they read.
  VariantTensorUse tensors;
};

/// \p source compiled and checked for \p triple in \p ctx.
llvm::Expected<CompiledVariant> compileVariant(const VariantSource &source,
                                               llvm::StringRef triple,
                                               llvm::LLVMContext &ctx);

/// The triple a variant is compiled for to join \p arch's kernels.
std::string variantTriple(const ArchInfo &arch);

} // namespace fmhajit
