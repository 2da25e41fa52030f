//===- KernelAbiIR.cpp - FwdParams as an LLVM struct type -----------------===//
#include "ir/KernelAbiIR.h"
#include "llvm/ADT/SmallVector.h"

using namespace fmhajit;
using namespace llvm;

StructType *fmhajit::fwdParamsType(LLVMContext &ctx) {
  if (StructType *existing = StructType::getTypeByName(ctx, "fmhajit.FwdParams"))
    return existing;
  Type *i64 = Type::getInt64Ty(ctx);
  Type *strides = StructType::get(ctx, {i64, i64, i64});
  SmallVector<Type *, 32> fields;
  for (AbiField f : kFwdParamsFields) {
    switch (f) {
    case AbiField::Ptr:
      fields.push_back(PointerType::get(ctx, 0));
      break;
    case AbiField::Strides:
      fields.push_back(strides);
      break;
    case AbiField::I32:
      fields.push_back(Type::getInt32Ty(ctx));
      break;
    case AbiField::F32:
      fields.push_back(Type::getFloatTy(ctx));
      break;
    }
  }
  return StructType::create(ctx, fields, "fmhajit.FwdParams");
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

Value *ParamsReader::get(FwdParamsIndex field, const Twine &name) {
  Value *addr = b.CreateStructGEP(type, params, field);
  return b.CreateLoad(type->getElementType(field), addr, name);
}

Value *ParamsReader::stride(FwdParamsIndex field, unsigned which,
                            const Twine &name) {
  Value *addr = b.CreateStructGEP(type, params, field);
  Type *strides = type->getElementType(field);
  Value *elem = b.CreateStructGEP(strides, addr, which);
  return b.CreateLoad(b.getInt64Ty(), elem, name);
}

Value *ParamsReader::workItems(bool splitItems) {
  auto wide = [&](FwdParamsIndex f) { return b.CreateSExt(get(f), b.getInt64Ty()); };
  Value *tiles = b.CreateMul(b.CreateMul(wide(kBatch), wide(kHeadsQ)), wide(kNumQTiles));
  if (!splitItems)
    return tiles;
  Value *splits = wide(kNumSplits);
  splits = b.CreateSelect(b.CreateICmpSGT(splits, b.getInt64(1)), splits, b.getInt64(1));
  return b.CreateMul(tiles, splits, "items");
}
