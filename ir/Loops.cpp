//===- Loops.cpp - Counted loops and guarded regions ----------------------===//
#include "ir/Loops.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/Function.h"

using namespace fmhajit;
using namespace llvm;

void fmhajit::emitFor(IRBuilderBase &b, Value *begin, Value *end, Value *step,
                      const Twine &name, function_ref<void(Value *)> body) {
  Function *fn = b.GetInsertBlock()->getParent();
  LLVMContext &ctx = fn->getContext();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(ctx, name + ".header", fn);
  BasicBlock *bodyBlock = BasicBlock::Create(ctx, name + ".body", fn);
  BasicBlock *latch = BasicBlock::Create(ctx, name + ".latch", fn);
  BasicBlock *exit = BasicBlock::Create(ctx, name + ".exit", fn);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  PHINode *iv = b.CreatePHI(begin->getType(), 2, name + ".iv");
  iv->addIncoming(begin, pre);
  b.CreateCondBr(b.CreateICmpSLT(iv, end), bodyBlock, exit);

  b.SetInsertPoint(bodyBlock);
  body(iv);
  b.CreateBr(latch);

  b.SetInsertPoint(latch);
  Value *next = b.CreateNSWAdd(iv, step, name + ".next");
  iv->addIncoming(next, latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
}

void fmhajit::disableHoisting(BranchInst *latch) {
  LLVMContext &ctx = latch->getContext();
  MDNode *hint = MDNode::get(ctx, MDString::get(ctx, "llvm.licm.disable"));
  // A loop ID is a distinct node whose first operand is itself.
  MDNode *id = MDNode::getDistinct(ctx, {nullptr, hint});
  id->replaceOperandWith(0, id);
  latch->setMetadata(LLVMContext::MD_loop, id);
}

SmallVector<Value *, 16> fmhajit::emitForCarried(
    IRBuilderBase &b, Value *begin, Value *end, Value *step, const Twine &name,
    ArrayRef<Value *> initial,
    function_ref<SmallVector<Value *, 16>(Value *, ArrayRef<Value *>)> body) {
  Function *fn = b.GetInsertBlock()->getParent();
  LLVMContext &ctx = fn->getContext();
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(ctx, name + ".header", fn);
  BasicBlock *bodyBlock = BasicBlock::Create(ctx, name + ".body", fn);
  BasicBlock *exit = BasicBlock::Create(ctx, name + ".exit", fn);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  PHINode *iv = b.CreatePHI(begin->getType(), 2, name + ".iv");
  iv->addIncoming(begin, pre);
  SmallVector<Value *, 16> current;
  for (Value *v : initial) {
    PHINode *phi = b.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, pre);
    current.push_back(phi);
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, end), bodyBlock, exit);

  b.SetInsertPoint(bodyBlock);
  SmallVector<Value *, 16> next = body(iv, current);
  Value *nextIv = b.CreateNSWAdd(iv, step, name + ".next");
  BasicBlock *latch = b.GetInsertBlock();
  iv->addIncoming(nextIv, latch);
  for (auto [phi, v] : llvm::zip(current, next))
    cast<PHINode>(phi)->addIncoming(v, latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  return current;
}

void fmhajit::emitFor(IRBuilderBase &b, unsigned count, const Twine &name,
                      function_ref<void(Value *)> body) {
  emitFor(b, b.getInt64(0), b.getInt64(count), b.getInt64(1), name, body);
}

void fmhajit::emitIf(IRBuilderBase &b, Value *cond, const Twine &name,
                     function_ref<void()> then) {
  Function *fn = b.GetInsertBlock()->getParent();
  BasicBlock *thenBlock =
      BasicBlock::Create(fn->getContext(), name + ".then", fn);
  BasicBlock *join = BasicBlock::Create(fn->getContext(), name + ".join", fn);
  b.CreateCondBr(cond, thenBlock, join);
  b.SetInsertPoint(thenBlock);
  then();
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

void fmhajit::emitIfElse(IRBuilderBase &b, Value *cond, const Twine &name,
                         function_ref<void()> then,
                         function_ref<void()> otherwise) {
  Function *fn = b.GetInsertBlock()->getParent();
  LLVMContext &ctx = fn->getContext();
  BasicBlock *thenBlock = BasicBlock::Create(ctx, name + ".then", fn);
  BasicBlock *elseBlock = BasicBlock::Create(ctx, name + ".else", fn);
  BasicBlock *join = BasicBlock::Create(ctx, name + ".join", fn);
  b.CreateCondBr(cond, thenBlock, elseBlock);
  b.SetInsertPoint(thenBlock);
  then();
  b.CreateBr(join);
  b.SetInsertPoint(elseBlock);
  otherwise();
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

AllocaInst *fmhajit::entryAlloca(IRBuilderBase &b, Type *type,
                                 const Twine &name, unsigned align,
                                 unsigned count) {
  Function *fn = b.GetInsertBlock()->getParent();
  IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  AllocaInst *a = entry.CreateAlloca(
      type, count == 1 ? nullptr : entry.getInt64(count), name);
  if (align)
    a->setAlignment(Align(align));
  return a;
}
