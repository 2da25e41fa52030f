//===- KernelAbiIR.cpp - KernelArgs as an LLVM struct type ----------------===//
#include "ir/KernelAbiIR.h"
#include "specs/pipelines/WgmmaLayout.h"
#include "llvm/ADT/SmallVector.h"
#include <iterator>

using namespace fmhajit;
using namespace llvm;

ArrayType *fmhajit::variantTensorsType(LLVMContext &ctx) {
  Type *slot =
      StructType::get(ctx, {PointerType::get(ctx, 0), Type::getInt64Ty(ctx)});
  return ArrayType::get(slot, kMaxVariantTensors);
}

StructType *fmhajit::kernelArgsType(LLVMContext &ctx) {
  if (StructType *existing =
          StructType::getTypeByName(ctx, "fmhajit.KernelArgs"))
    return existing;
  Type *i64 = Type::getInt64Ty(ctx);
  Type *strides = StructType::get(ctx, {i64, i64, i64});
  SmallVector<Type *, 32> fields;
  for (ArgKind f : kKernelArgsKinds) {
    switch (f) {
    case ArgKind::Ptr:
      fields.push_back(PointerType::get(ctx, 0));
      break;
    case ArgKind::Strides:
      fields.push_back(strides);
      break;
    case ArgKind::I32:
      fields.push_back(Type::getInt32Ty(ctx));
      break;
    case ArgKind::I64:
      fields.push_back(i64);
      break;
    case ArgKind::F32:
      fields.push_back(Type::getFloatTy(ctx));
      break;
    case ArgKind::VariantTensors:
      fields.push_back(variantTensorsType(ctx));
      break;
    }
  }
  return StructType::create(ctx, fields, "fmhajit.KernelArgs");
}

Type *fmhajit::elementType(LLVMContext &ctx, DType t) {
  switch (t) {
  case DType::F32:
    return Type::getFloatTy(ctx);
  case DType::F16:
    return Type::getHalfTy(ctx);
  case DType::BF16:
    return Type::getBFloatTy(ctx);
  case DType::F8E4M3:
  case DType::F8E5M2:
    return Type::getInt8Ty(ctx); // converted with target intrinsics
  }
  llvm_unreachable("unknown dtype");
}

Value *ArgsReader::address(KernelArgsField field) {
  return b.CreateStructGEP(type, args, field,
                           "args." + Twine(kKernelArgsNames[field]));
}

Value *ArgsReader::get(KernelArgsField field, const Twine &name) {
  return b.CreateLoad(type->getElementType(field), address(field), name);
}

Value *ArgsReader::stride(KernelArgsField field, unsigned which,
                          const Twine &name) {
  static const char *const kStrideNames[] = {"batch", "row", "head"};
  assert(which < std::size(kStrideNames) &&
         "a TensorStrides has three strides");
  Type *strides = type->getElementType(field);
  Value *elem = b.CreateStructGEP(strides, address(field), which,
                                  "args." + Twine(kKernelArgsNames[field]) +
                                      "." + kStrideNames[which]);
  return b.CreateLoad(b.getInt64Ty(), elem, name);
}

Value *ArgsReader::workItems(const KernelSpec &spec) {
  auto wide = [&](KernelArgsField f) {
    return b.CreateSExt(get(f), b.getInt64Ty());
  };
  Value *heads = wide(spec.pack_gqa ? kHeadsKv : kHeadsQ);
  Value *tiles =
      b.CreateMul(b.CreateMul(wide(kBatch), heads), wide(kNumQTiles));
  if (spec.family == Family::BwdDqDkDv) { // bwdKeyItems, then query items
    Value *keyTiles =
        b.CreateSDiv(b.CreateAdd(wide(kSeqlenK), b.getInt64(spec.bn - 1)),
                     b.getInt64(spec.bn));
    Value *keyItems = b.CreateMul(wide(kBatch), wide(kHeadsKv));
    if (!spec.head_items)
      keyItems = b.CreateMul(keyItems, keyTiles);
    return bwdHasQueryItems(spec) ? b.CreateAdd(keyItems, tiles) : keyItems;
  }
  if (splitsTail(spec)) { // tailItems * (tailParts - 1) more (WorkItem.h)
    Value *parts = wide(kTailParts);
    Value *extra =
        b.CreateSelect(b.CreateICmpSGT(parts, b.getInt64(1)),
                       b.CreateSub(parts, b.getInt64(1)), b.getInt64(0));
    return b.CreateAdd(tiles, b.CreateMul(wide(kTailItems), extra), "items");
  }
  if (!hasSplitWorkItems(spec.family))
    return tiles;
  Value *splits = wide(kNumSplits);
  splits = b.CreateSelect(b.CreateICmpSGT(splits, b.getInt64(1)), splits,
                          b.getInt64(1));
  // Under a split schedule numSplits counts every sequence's parts.
  Value *schedule = get(kSplitSchedule);
  Value *scheduled =
      b.CreateICmpNE(schedule, Constant::getNullValue(schedule->getType()));
  Value *perPart = b.CreateMul(heads, wide(kNumQTiles));
  return b.CreateMul(b.CreateSelect(scheduled, perPart, tiles), splits,
                     "items");
}
