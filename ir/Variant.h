//===- Variant.h - The seam between the recipe and a user's variant -------===//
//
// A variant is C++ the user writes (docs/variants.md):
//   float score_mod(float score, int b, int h, int q, int k);
//   bool  mask_mod(int b, int h, int q, int k);
// compiler/variants/ compiles it with clang for the kernel's triple and hands
// ir/ a module that defines one or both of kScoreModSymbol and
// kMaskModSymbol with the types below, calling nothing but the LLVM math
// intrinsics it allows. ir/ knows nothing of clang: it links that module into
// the kernel's, the recipe calls the functions where it applies its score
// modifiers (ScoreMods), and inlineVariant() leaves no call behind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/TargetInfo.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace fmhajit {

/// float (float score, i32 b, i32 h, i32 q, i32 k)
inline constexpr const char *kScoreModSymbol = "fmhajit.variant.score_mod";
/// i1 (i32 b, i32 h, i32 q, i32 k): true where the key is visible
inline constexpr const char *kMaskModSymbol = "fmhajit.variant.mask_mod";

llvm::FunctionType *scoreModType(llvm::LLVMContext &ctx);
llvm::FunctionType *maskModType(llvm::LLVMContext &ctx);

/// Links \p variant (in \p kernel's context) into \p kernel before the
/// recipe runs; refuses a module whose functions have other types.
llvm::Error linkVariant(llvm::Module &kernel,
                        std::unique_ptr<llvm::Module> variant);

/// The variant's functions in \p m (null where the variant has none).
llvm::Function *findScoreMod(const llvm::Module &m);
llvm::Function *findMaskMod(const llvm::Module &m);

/// Calls \p fn on \p args, which are all scalars or all vectors of one
/// width (the tile vocabulary's element callbacks see either): a vector is
/// called lane by lane and the results gathered back,
///   %r.0 = call @fn(extractelement %a, 0, ...); insertelement ...
/// Once inlined, the lanes' code is alike and the SLP vectorizer may join it.
llvm::Value *callPerLane(llvm::IRBuilderBase &b, llvm::Function *fn,
                         llvm::ArrayRef<llvm::Value *> args);

/// Rewrites the variant's math on \p target's words (exp, exp2 and tanh
/// through TargetInfo, as the built-in modifiers use them), inlines every
/// call of the variant's functions and deletes them, so the kernel module
/// holds no call to them.
void inlineVariant(llvm::Module &kernel, TargetInfo &target);

} // namespace fmhajit
