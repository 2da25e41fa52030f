//===- VariantTensorReads.h - fmhajit_tensor as a bounded load ------------===//
//
// A variant reads run-time tensors through one accessor the prelude
// declares, `float fmhajit_tensor(int slot, long index)`
// (docs/variants.md#run-time-tensors). Until the variant is checked and
// optimized it stays a call to a pure function, so the optimizer may merge
// and hoist reads; then each call becomes a load from the slot's tensor that
// no index can take outside it. The tensors come through the entry points'
// last argument, a VariantTensors table (ir/KernelAbi.h): in a kernel,
// KernelArgs::variantTensors; on the host (the reference, the block map),
// the caller's array.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"

namespace fmhajit {

/// The accessor a variant reads its run-time tensors with, as the prelude
/// declares it (extern "C"): float (i32 slot, i64 index).
inline constexpr const char *kTensorReadSymbol = "fmhajit_tensor";

/// fmhajit_tensor's type: float (i32, i64).
llvm::FunctionType *tensorReadType(llvm::LLVMContext &ctx);

/// Replaces each call `fmhajit_tensor(s, %i)` in \p entry, s a constant
/// slot below kMaxVariantTensors (the checks refused anything else), with a
/// read of slot s of the table at \p entry's last argument that cannot
/// leave the tensor (the run gives every slot read at least one element):
///   %tensor<s>.data   = load ptr, gep %tensors, 0, s, 0
///   %tensor<s>.length = load i64, gep %tensors, 0, s, 1
///   %tensor<s>.at     = umin(%i, %tensor<s>.length - 1)    (i < 0: huge)
///   %x = load float, gep float, %tensor<s>.data, %tensor<s>.at
///   %tensor<s>.read   = select (%i u< %tensor<s>.length), %x, 0.0
/// No branch: the host's lanes stay alike and a GPU's threads converge.
void lowerTensorReads(llvm::Function &entry);

} // namespace fmhajit
