//===- Variant.h - The seam between the recipe and a user's variant -------===//
//
// A variant is C++ the user writes (docs/variants.md):
//   float score_mod(float score, int b, int h, int q, int k);
//   bool  mask_mod(int b, int h, int q, int k);
// which may read run-time tensors with `float fmhajit_tensor(int slot, long
// index)`. compiler/variants/ compiles it with clang for the kernel's triple
// and hands ir/ a module that defines one or both of kScoreModSymbol and
// kMaskModSymbol with the types below: the user's arguments and one more,
// the tensor table (a VariantTensors, ir/KernelAbi.h), from which
// lowerTensorReads() has made every fmhajit_tensor call a bounded load. They
// call nothing but the LLVM math intrinsics the checks allow. ir/ knows
// nothing of clang: it links that module into the kernel's, the recipe calls
// the functions where it applies its score modifiers (ScoreMods) with
// KernelArgs::variantTensors as the table, and inlineVariant() leaves no
// call behind.
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

/// float (float score, i32 b, i32 h, i32 q, i32 k, ptr tensors)
inline constexpr const char *kScoreModSymbol = "fmhajit.variant.score_mod";
/// i1 (i32 b, i32 h, i32 q, i32 k, ptr tensors): true where the key is
/// visible
inline constexpr const char *kMaskModSymbol = "fmhajit.variant.mask_mod";
/// The entry points' types: the user's arguments, then `ptr tensors`, the
/// address of a VariantTensors (address space 0; VariantTensorReads.h).
llvm::FunctionType *scoreModType(llvm::LLVMContext &ctx);
llvm::FunctionType *maskModType(llvm::LLVMContext &ctx);
/// Links \p variant (in \p kernel's context) into \p kernel before the
/// recipe runs; refuses a module whose functions have other types.
llvm::Error linkVariant(llvm::Module &kernel,
                        std::unique_ptr<llvm::Module> variant);

/// The variant's functions in \p m (null where the variant has none).
llvm::Function *findScoreMod(const llvm::Module &m);
llvm::Function *findMaskMod(const llvm::Module &m);
/// Whether \p scoreMod returns its score (argument 0) plus or minus a term
/// that does not read the score, as ALiBi and biases do.
bool addsToItsScore(const llvm::Function &scoreMod);

/// Calls \p fn on \p args, whose vectors all have one width (the tile
/// vocabulary's element callbacks see scalars or vectors): with vectors, its
/// lane version (VariantLanes.h), scalar integers splatted and the tensor
/// table passed as it is; where fn has none, fn lane by lane, the results
/// gathered back,
///   %r.0 = call @fn(extractelement %a, 0, ..., %tensors); insertelement ...
llvm::Value *callPerLane(llvm::IRBuilderBase &b, llvm::Function *fn,
                         llvm::ArrayRef<llvm::Value *> args);

/// Rewrites the variant's math on \p target's words (exp, exp2 and tanh
/// through TargetInfo, as the built-in modifiers use them), inlines every
/// call of the variant's functions and deletes them, so the kernel module
/// holds no call to them.
void inlineVariant(llvm::Module &kernel, TargetInfo &target);

} // namespace fmhajit
