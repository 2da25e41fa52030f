//===- KernelAbiIR.h - FwdParams as an LLVM struct type -------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// The LLVM struct with FwdParams' layout (kFwdParamsFields), in address
/// space 0 pointers.
llvm::StructType *fwdParamsType(llvm::LLVMContext &ctx);

/// The LLVM type of one element of \p t in memory.
llvm::Type *elementType(llvm::LLVMContext &ctx, DType t);

/// Reads FwdParams fields through a pointer to the struct.
class ParamsReader {
public:
  ParamsReader(llvm::IRBuilderBase &b, llvm::Value *params)
      : b(b), params(params), type(fwdParamsType(b.getContext())) {}
  llvm::Value *get(FwdParamsIndex field, const llvm::Twine &name = "");
  /// One of a TensorStrides field's three int64s (0 batch, 1 row, 2 head).
  llvm::Value *stride(FwdParamsIndex field, unsigned which,
                      const llvm::Twine &name = "");
  /// The call's work items as i64: batch * headsQ * numQTiles, times
  /// max(numSplits, 1) when \p splitItems: the count runtime's workItems()
  /// launches.
  llvm::Value *workItems(bool splitItems);

private:
  llvm::IRBuilderBase &b;
  llvm::Value *params;
  llvm::StructType *type;
};

} // namespace fmhajit
