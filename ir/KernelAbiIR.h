//===- KernelAbiIR.h - KernelArgs as an LLVM struct type ------------------===//
#pragma once

#include "ir/KernelAbi.h"
#include "specs/KernelSpec.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/IRBuilder.h"

namespace fmhajit {

/// The LLVM struct `%fmhajit.KernelArgs` with KernelArgs' layout
/// (kKernelArgsKinds), in address space 0 pointers.
llvm::StructType *kernelArgsType(llvm::LLVMContext &ctx);

/// VariantTensors as IR: [kMaxVariantTensors x {ptr, i64}], each slot's
/// data and length.
llvm::ArrayType *variantTensorsType(llvm::LLVMContext &ctx);

/// The LLVM type of one element of \p t in memory.
llvm::Type *elementType(llvm::LLVMContext &ctx, DType t);

/// Reads KernelArgs fields through a pointer to the struct. Each field's
/// address is named after it, so that the IR (and its tests) say which field
/// a kernel reads:
///   %args.seqlenQ = getelementptr inbounds nuw %fmhajit.KernelArgs, ptr %0,
///   i32 0, i32 15 %sq = load i32, ptr %args.seqlenQ
class ArgsReader {
public:
  ArgsReader(llvm::IRBuilderBase &b, llvm::Value *args)
      : b(b), args(args), type(kernelArgsType(b.getContext())) {}
  llvm::Value *get(KernelArgsField field, const llvm::Twine &name = "");
  /// The address of \p field, `%args.<field>`: for a field read by
  /// pieces elsewhere (the variant's tensor table, ir/Variant.h).
  llvm::Value *address(KernelArgsField field);
  /// One of a TensorStrides field's three int64s (0 batch, 1 row, 2 head),
  /// read through `%args.<field>.<batch|row|head>`.
  llvm::Value *stride(KernelArgsField field, unsigned which,
                      const llvm::Twine &name = "");
  /// The call's work items of \p spec's kernel as i64: batch * heads *
  /// numQTiles (heads: headsKv under pack_gqa, else headsQ), times
  /// max(numSplits, 1) when hasSplitWorkItems: the count runtime's
  /// workItems() launches.
  llvm::Value *workItems(const KernelSpec &spec);

private:
  llvm::IRBuilderBase &b;
  llvm::Value *args;
  llvm::StructType *type;
};

} // namespace fmhajit
