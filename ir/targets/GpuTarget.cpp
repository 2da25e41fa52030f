//===- GpuTarget.cpp - Shared parts of the GPU targets --------------------===//
#include "ir/targets/GpuTarget.h"
#include "ir/KernelAbiIR.h"
#include "ir/TileOps.h"

using namespace fmhajit;
using namespace llvm;

std::unique_ptr<TileOps> GpuTargetInfo::createTileOps(IRBuilderBase &b) {
  return createGpuSimtTileOps(b, *this);
}

void GpuTargetInfo::emitBlockWorkItem(
    IRBuilderBase &b, Value *params,
    function_ref<void(IRBuilderBase &, Value *, Value *)> body) {
  ArgsReader p(b, params);
  Value *total = p.workItems(spec);
  Value *block = b.CreateZExt(blockId(b), b.getInt64Ty());
  body(b, params,
       b.CreateSub(b.CreateSub(total, b.getInt64(1)), block, "work"));
}

Function *GpuTargetInfo::emitKernel(
    Module &m, StringRef name, StructType *params,
    function_ref<void(IRBuilderBase &, Value *, Value *)> body) {
  LLVMContext &ctx = m.getContext();
  SmallVector<Type *, 2> paramTypes = {
      PointerType::get(ctx, paramAddressSpace())};
  paramTypes.append(extraParams(ctx));
  auto *type = FunctionType::get(Type::getVoidTy(ctx), paramTypes, false);
  Function *fn = Function::Create(type, Function::ExternalLinkage, name, m);
  fn->addParamAttr(0, Attribute::getWithAlignment(ctx, Align(8)));
  fn->addFnAttr(Attribute::NoUnwind);
  declareKernel(*fn, params);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", fn));
  emitBlockWorkItem(b, fn->getArg(0), body);
  b.CreateRetVoid();
  return fn;
}
