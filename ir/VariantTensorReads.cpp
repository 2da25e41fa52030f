//===- VariantTensorReads.cpp - fmhajit_tensor as a bounded load ----------===//
#include "ir/VariantTensorReads.h"
#include "ir/KernelAbiIR.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

using namespace fmhajit;
using namespace llvm;

FunctionType *fmhajit::tensorReadType(LLVMContext &ctx) {
  return FunctionType::get(Type::getFloatTy(ctx),
                           {Type::getInt32Ty(ctx), Type::getInt64Ty(ctx)},
                           false);
}

// Element umin(i, length - 1) of the slot, and 0 where i is outside
// [0, length): the load itself never leaves the tensor. Unsigned, a
// negative index is a huge one, so one umin clamps both sides, and the
// index is inside exactly where the clamp left it as it was.
static Value *emitBoundedRead(IRBuilderBase &b, Value *tensors, unsigned slot,
                              Value *index) {
  Type *table = variantTensorsType(b.getContext());
  std::string name = "tensor" + std::to_string(slot);
  auto field = [&](unsigned which, Type *type, const char *what) {
    Value *at = b.CreateConstInBoundsGEP2_32(table, tensors, 0, slot);
    return b.CreateLoad(
        type, b.CreateStructGEP(table->getArrayElementType(), at, which),
        name + what);
  };
  Value *data = field(0, b.getPtrTy(), ".data");
  Value *length = field(1, b.getInt64Ty(), ".length");
  Value *at = b.CreateBinaryIntrinsic(Intrinsic::umin, index,
                                      b.CreateSub(length, b.getInt64(1)),
                                      nullptr, name + ".at");
  Value *x = b.CreateAlignedLoad(
      b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), data, at), Align(4));
  Value *inside = b.CreateICmpULT(index, length);
  return b.CreateSelect(inside, x, ConstantFP::get(b.getFloatTy(), 0.0),
                        name + ".read");
}

void fmhajit::lowerTensorReads(Function &entry) {
  SmallVector<CallInst *, 4> reads;
  for (Instruction &inst : instructions(entry))
    if (auto *call = dyn_cast<CallInst>(&inst))
      if (Function *callee = call->getCalledFunction();
          callee && callee->getName() == kTensorReadSymbol)
        reads.push_back(call);
  Value *tensors = entry.getArg(entry.arg_size() - 1);
  for (CallInst *call : reads) {
    auto *slot = cast<ConstantInt>(call->getArgOperand(0));
    assert(slot->getZExtValue() < kMaxVariantTensors && "checked slot");
    IRBuilder<> b(call);
    call->replaceAllUsesWith(emitBoundedRead(
        b, tensors, unsigned(slot->getZExtValue()), call->getArgOperand(1)));
    call->eraseFromParent();
  }
}
